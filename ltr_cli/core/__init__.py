"""The lowest layer: the leaf modules every other layer may import (config models' base
classes, the YAML reader, the round-log columns, the kernels' codes, the metric conventions' table).
They import nothing of the package but each other and the top-level leaves."""
