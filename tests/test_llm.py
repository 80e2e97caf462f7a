import dataclasses
import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from biaslab.llm import GenParams, LLMError, make
from biaslab.llm.base import LLM, to_messages
from biaslab.llm.cache import CachedLLM, cache_key
from biaslab.llm.rules import RuleBased

from conftest import GREEDY, model_dir


class Counting(LLM):
    backend, model = "fake", "fake-1"

    def __init__(self):
        self.seen = []

    def _generate(self, messages, params, task, inputs):
        self.seen += [m[-1]["content"] for m in messages]
        return [f"echo:{m[-1]['content']}:{params.temperature}" for m in messages]


def test_to_messages():
    assert to_messages("hi", system="be brief") == [{"role": "system", "content": "be brief"},
                                                    {"role": "user", "content": "hi"}]


def test_rules_backend_is_deterministic_and_refuses_unknown_tasks():
    llm = RuleBased()
    out = llm.generate(["q1", "q2"], GREEDY, task="choose_by_overlap", inputs=[
        {"context": "The grandfather forgot his keys.", "options": ["The grandson", "The grandfather"]},
        {"context": "", "options": ["a", "b"]}])
    assert out == ["The grandfather", "a"]
    assert llm.generate(["x"], GREEDY, task="echo", inputs=[{"text": "same"}]) == ["same"]
    with pytest.raises(LLMError, match=r"no rule for task 'rewrite'.*llm.backend"):
        llm.generate(["x"], GREEDY, task="rewrite")
    with pytest.raises(LLMError, match="2 prompts but 1 inputs"):
        llm.generate(["a", "b"], GREEDY, task="echo", inputs=[{"text": "a"}])


def test_cache_serves_repeats_without_calling_the_backend(tmp_path):
    inner = Counting()
    llm = CachedLLM(inner, tmp_path / "r.sqlite")
    p = GenParams(max_new_tokens=8, temperature=0.0, top_p=1.0, seed=0)
    assert llm.generate(["a", "b", "a"], p) == ["echo:a:0.0", "echo:b:0.0", "echo:a:0.0"]
    assert inner.seen == ["a", "b"]
    again = CachedLLM(Counting(), tmp_path / "r.sqlite")  # a fresh process, same cache file
    assert again.generate(["b"], p) == ["echo:b:0.0"] and again.inner.seen == []
    assert llm.generate(["a"], GenParams(max_new_tokens=8, temperature=0.7, top_p=1.0, seed=0)) == ["echo:a:0.7"]  # params are part of the key
    assert inner.seen == ["a", "b", "a"]


def test_cache_key_parts():
    m = to_messages("hello")
    k = cache_key("openai", "m1", m, GREEDY)
    assert k != cache_key("openai", "m2", m, GREEDY)
    assert k != cache_key("transformers", "m1", m, GREEDY)
    assert k != cache_key("openai", "m1", m, dataclasses.replace(GREEDY, max_new_tokens=5))
    assert cache_key("rules", "r", m, GREEDY, "echo", {"text": "a"}) != \
        cache_key("rules", "r", m, GREEDY, "echo", {"text": "b"})


@pytest.fixture
def fake_openai():
    """A loopback server speaking the chat-completions protocol; records requests."""
    requests = []

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self):
            body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
            requests.append({"path": self.path, "auth": self.headers.get("Authorization"), "body": body})
            if body["model"] == "broken":
                self.send_response(400)
                payload = {"error": {"message": "bad model", "type": "invalid_request_error"}}
            else:
                self.send_response(200)
                payload = {"id": "x", "object": "chat.completion", "created": 0, "model": body["model"],
                           "choices": [{"index": 0, "finish_reason": "stop", "message": {
                               "role": "assistant", "content": "ANSWER to " + body["messages"][-1]["content"]}}],
                           "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2}}
            data = json.dumps(payload).encode()
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def log_message(self, *a):
            pass

    srv = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{srv.server_address[1]}/v1", requests
    srv.shutdown()


def test_openai_compatible_backend_against_a_loopback_server(fake_openai, monkeypatch, no_network):
    from biaslab.config import OpenAIParams

    url, requests = fake_openai
    monkeypatch.setenv("TEST_LLM_KEY", "sk-test")
    llm = make("openai", model="unused", model_dir=None, device="cpu", cache=False,
               openai_params=OpenAIParams(base_url=url, model="gpt-test", api_key_env="TEST_LLM_KEY", timeout=10.0,
                                          max_retries=0))
    out = llm.generate(["Who?"], GenParams(max_new_tokens=7, temperature=0.0, top_p=1.0, seed=3), system="Be brief.")
    assert out == ["ANSWER to Who?"]
    req = requests[0]
    assert req["path"] == "/v1/chat/completions" and req["auth"] == "Bearer sk-test"
    assert req["body"]["model"] == "gpt-test" and req["body"]["max_tokens"] == 7 and req["body"]["seed"] == 3
    assert req["body"]["messages"][0] == {"role": "system", "content": "Be brief."}
    bad = make("openai", model="unused", model_dir=None, device="cpu", cache=False,
               openai_params=OpenAIParams(base_url=url, model="broken", api_key_env="TEST_LLM_KEY", timeout=10.0,
                                          max_retries=0))
    with pytest.raises(LLMError, match="request for model 'broken' failed"):
        bad.generate(["x"], GREEDY)
    assert no_network == []


def test_openai_key_only_from_environment(monkeypatch):
    from biaslab.config import OpenAIParams

    monkeypatch.delenv("NO_SUCH_KEY", raising=False)
    with pytest.raises(LLMError, match="environment variable NO_SUCH_KEY is not set"):
        make("openai", model="unused", model_dir=None, device="cpu", cache=False,
             openai_params=OpenAIParams(base_url="https://api.example.com/v1", model="m", api_key_env="NO_SUCH_KEY",
                                        timeout=10.0, max_retries=0))


def test_unknown_backend():
    with pytest.raises(LLMError, match="unknown llm.backend"):
        make("magic", model="m", model_dir=None, cache=False, device="cpu")
    with pytest.raises(LLMError, match="needs the weights"):
        make("transformers", model="m", model_dir=None, cache=False, device="cpu")


@pytest.mark.slow
def test_local_smollm2_generates_offline(no_network, tmp_path):
    llm = CachedLLM(make("transformers", model="smollm2-135m-instruct", model_dir=model_dir("smollm2-135m-instruct"),
                         cache=False, device="cpu"), tmp_path / "r.sqlite")
    [a] = llm.generate(["What is the capital of France? Answer with one word."], GenParams(max_new_tokens=8, temperature=0.0, top_p=1.0, seed=0))
    assert "paris" in a.lower()
    hits = llm.hits
    [b] = llm.generate(["What is the capital of France? Answer with one word."], GenParams(max_new_tokens=8, temperature=0.0, top_p=1.0, seed=0))
    assert a == b and llm.hits == hits + 1 == 1
    assert no_network == []
