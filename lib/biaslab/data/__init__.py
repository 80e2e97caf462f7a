"""The data layer: ``fetch`` puts the public data sets under ``data/raw/``; one reader module per data set
turns its files into validated pandas frames (or small typed objects) with documented columns.

Every reader fails on a missing file, a missing column or a malformed row with a :class:`DataError` that
names the file, the row or column, and the fix.
"""

from ._schema import DataError, dataset_dir

__all__ = ["DataError", "dataset_dir"]
