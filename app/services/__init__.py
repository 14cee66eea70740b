"""The owner's services: plain Python the screens and the shell commands call; no Textual."""
