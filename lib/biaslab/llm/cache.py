"""On-disk response cache for any backend (SQLite, one file under ``<cache>/llm/``)."""

from __future__ import annotations

import hashlib
import json
import sqlite3
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from ..paths import cache_dir
from .base import LLM, GenParams, Message


def cache_key(backend: str, model: str, messages: list[Message], params: GenParams, task: str | None = None,
              inputs: Mapping[str, Any] | None = None) -> str:
    payload = {"backend": backend, "model": model, "messages": messages, "params": params.as_dict()}
    if inputs is not None:  # only for backends whose answer depends on structured inputs
        payload["task"] = task
        payload["inputs"] = inputs
    blob = json.dumps(payload, sort_keys=True, ensure_ascii=False, default=str)
    return hashlib.sha256(blob.encode("utf-8")).hexdigest()


class CachedLLM(LLM):
    """Wraps a backend; only cache misses reach it, in one batch."""

    def __init__(self, inner: LLM, path: Path | None = None):
        self.inner = inner
        self.backend, self.model, self.uses_inputs = inner.backend, inner.model, inner.uses_inputs
        self.path = path or cache_dir() / "llm" / "responses.sqlite"
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._db = sqlite3.connect(self.path, timeout=60)
        self._db.execute("PRAGMA journal_mode=WAL")
        self._db.execute("CREATE TABLE IF NOT EXISTS responses (k TEXT PRIMARY KEY, backend TEXT, model TEXT, "
                         "response TEXT NOT NULL)")
        self.hits = 0
        self.misses = 0

    def _generate(self, messages, params, task, inputs):
        keys = [cache_key(self.backend, self.model, m, params, task, i if self.uses_inputs else None)
                for m, i in zip(messages, inputs, strict=False)]
        found: dict[str, str] = {}
        unique = list(dict.fromkeys(keys))
        for s in range(0, len(unique), 900):
            chunk = unique[s : s + 900]
            found.update(self._db.execute(
                f"SELECT k, response FROM responses WHERE k IN ({','.join('?' * len(chunk))})", chunk).fetchall())
        todo, queued = [], set()
        for i, k in enumerate(keys):  # first occurrence of each missing key
            if k not in found and k not in queued:
                todo.append(i)
                queued.add(k)
        self.hits += len(keys) - len(todo)
        self.misses += len(todo)
        if todo:
            answers = self.inner._generate([messages[i] for i in todo], params, task, [inputs[i] for i in todo])
            with self._db:
                self._db.executemany("INSERT OR REPLACE INTO responses VALUES (?, ?, ?, ?)",
                                     [(keys[i], self.backend, self.model, a) for i, a in zip(todo, answers, strict=False)])
            found.update((keys[i], a) for i, a in zip(todo, answers, strict=False))
        return [found[k] for k in keys]


class ScoreCache:
    """On-disk cache of numeric model outputs (log-probabilities of answer options and the like), keyed by
    everything that determines them: ``(model, kind, prompt, options)``. One SQLite file per purpose."""

    def __init__(self, name: str, path: Path | None = None):
        self.path = path or cache_dir() / "llm" / f"{name}.sqlite"
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._db = sqlite3.connect(self.path, timeout=60)
        self._db.execute("PRAGMA journal_mode=WAL")
        self._db.execute("CREATE TABLE IF NOT EXISTS scores (k TEXT PRIMARY KEY, v TEXT NOT NULL)")

    @staticmethod
    def key(model: str, kind: str, prompt: str, options: tuple[str, ...]) -> str:
        blob = json.dumps([model, kind, prompt, list(options)], ensure_ascii=False)
        return hashlib.sha256(blob.encode("utf-8")).hexdigest()

    def get(self, keys: list[str]) -> dict[str, list[float]]:
        found: dict[str, list[float]] = {}
        unique = list(dict.fromkeys(keys))
        for s in range(0, len(unique), 900):
            chunk = unique[s : s + 900]
            found.update((k, json.loads(v)) for k, v in self._db.execute(
                f"SELECT k, v FROM scores WHERE k IN ({','.join('?' * len(chunk))})", chunk).fetchall())
        return found

    def put(self, items: dict[str, list[float]]) -> None:
        with self._db:
            self._db.executemany("INSERT OR REPLACE INTO scores VALUES (?, ?)",
                                 [(k, json.dumps([float(x) for x in v])) for k, v in items.items()])
