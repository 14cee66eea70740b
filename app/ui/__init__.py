"""Screens and widgets of the dashboard."""
