"""`autoresearch init`: a new session's files, written fresh or imported from pi."""
