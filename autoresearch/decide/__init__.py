"""The decision rule and its statistics: pure functions of samples."""
