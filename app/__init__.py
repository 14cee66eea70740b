"""vaultwatch dashboard (Textual). Reads git and the journal; human-side writes only."""
