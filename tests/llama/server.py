"""llama.cpp's own HTTP server (xllamacpp), on 127.0.0.1, for golem's wire tests.

    python server.py MODEL.gguf PORT TEMPLATE.jinja

Serves /v1/chat/completions, /v1/responses, /v1/messages and /health until its standard
input closes (the test process that started it ended) or it is killed. Threads: the
GOLEM_LLAMA_THREADS variable, else 1. One thread, because the tests run beside other tests
and builds: llama.cpp's threads wait for each other at every step, and on a busy 2-core
machine two of them took three times as long as one (159 s against 47 s for the six wire
round trips).
"""

import os
import pathlib
import sys

import xllamacpp


def main() -> None:
    model, port, template = sys.argv[1], int(sys.argv[2]), pathlib.Path(sys.argv[3])
    params = xllamacpp.CommonParams()
    params.model.path = model
    params.hostnames = ["127.0.0.1"]
    params.port = port
    params.n_ctx = 4096
    params.n_parallel = 1
    params.use_jinja = True
    params.chat_template = template.read_text()
    params.cpuparams.n_threads = int(os.environ.get("GOLEM_LLAMA_THREADS", "1"))
    params.cpuparams_batch.n_threads = params.cpuparams.n_threads
    server = xllamacpp.Server(params)
    print(f"listening on {server.listening_address}", file=sys.stderr, flush=True)
    sys.stdin.read()
    del server


if __name__ == "__main__":
    main()
