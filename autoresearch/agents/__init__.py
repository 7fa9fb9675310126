"""The faces an agent uses to drive its own session: try/result/state and MCP."""
