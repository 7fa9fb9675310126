"""A coding agent proposes, the loop decides: presets, prompt, guard."""
