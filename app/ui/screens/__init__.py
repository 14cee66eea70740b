"""Full-page screens. A screen never imports another screen: it asks the app (`app.ui.navigation`)."""
