"""The driver and the session it carries: one experiment at a time, resumable."""
