"""Widgets and renderers the screens share."""
