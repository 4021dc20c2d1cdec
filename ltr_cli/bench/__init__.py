"""``ltr bench``: speed and memory measured side by side in one run."""
