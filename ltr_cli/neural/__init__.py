"""Neural learning to rank on JAX: the ranking losses (:mod:`ltr_cli.neural.losses`) and the
neural scorers and their training learner.

Conventions shared by every module here (docs/neural.md):

* a batch is ``scores: [Q, L]`` (Q slates of L positions), ``labels: [Q, L]`` graded
  relevance >= 0 and ``mask: [Q, L]`` bool, True for a real document, False for padding;
* whatever a scorer writes at a padded position never changes a loss's value, nor its
  gradient at the real positions;
* float32 by default; float64 when the inputs are float64 and JAX's x64 mode is on.

JAX and optax are the optional extra ``neural`` (``pip install -e '.[neural]'``). Importing
this package, or :mod:`ltr_cli.neural.losses`, does not import JAX: it is imported when a
loss is computed or a scorer built.
"""
