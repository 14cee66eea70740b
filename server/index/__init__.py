"""Derived caches over the notes, rebuildable at any time: the parsed-note index and its
change watcher, FTS5 search, recall's vectors."""
