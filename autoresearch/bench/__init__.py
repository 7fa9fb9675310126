"""Running the target: processes, runners, the one measurement routine, metric readers."""
