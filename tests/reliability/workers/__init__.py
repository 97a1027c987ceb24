"""Worker processes the reliability tests start, SIGKILL and restart."""
