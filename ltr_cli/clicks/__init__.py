"""Click models: pure, seeded simulations of users clicking on a shown list.

A model (:class:`~ltr_cli.clicks.base.ClickModel`) gives, for the labels of a shown list,
its exact law (``law``), its marginals (``marginal``) and samples from a numpy generator
(``sample``). ``spec.build_model`` makes one from a name or a custom table. Modules: the
named tables (``tables``), the walk every model reduces to (``law``), the cascade with its
stop rules (``cascade``), the position-based model (``pbm``), the reference code's
examine-stop model (``examine``), and the records the ``ltr clicks`` command prints
(``records``).
"""
