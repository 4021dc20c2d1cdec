"""A run's folder format read and written (validated: a results folder is untrusted input), its saved models, and the scores they give a file (``ltr score``)."""
