"""``ltr run``: a spec turned into run folders (online and batch), with locks and one write path."""
