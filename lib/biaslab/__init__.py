"""biaslab — reproducible research on social bias in text encoders and retrievers.

Importing the package is cheap on purpose (no torch, no sentence-transformers): heavy libraries are
imported by the modules that need them. Importing it also makes the Hugging Face stack offline by
default, so nothing tries to reach a model hub unless the user opts in (``BIASLAB_ALLOW_DOWNLOADS=1``
in the environment, or ``models.allow_downloads: true`` in params.yaml for stages run through
``biaslab.run``).
"""

from __future__ import annotations

import os
import warnings

__version__ = "0.1.0"

if os.environ.get("BIASLAB_ALLOW_DOWNLOADS", "0") not in ("1", "true", "yes"):
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
    os.environ.setdefault("HF_DATASETS_OFFLINE", "1")
# Telemetry of the tool chain is off: nothing leaves the machine unasked.
os.environ.setdefault("HF_HUB_DISABLE_TELEMETRY", "1")
os.environ.setdefault("DVC_NO_ANALYTICS", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
# tqdm.auto warns once per process when ipywidgets is absent (executed notebooks use plain bars or none).
warnings.filterwarnings("ignore", message="IProgress not found")
