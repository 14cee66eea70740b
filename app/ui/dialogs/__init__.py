"""Modal dialogs the screens open."""
