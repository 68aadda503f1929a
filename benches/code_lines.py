#!/usr/bin/env python3
"""What one client of the `wires_http` bench runs per run: instructions, and the 64-byte
lines of machine code it goes through. Not a test; nothing is asserted.

    benches/code_lines.py <wires_http executable> <wire>/<client> [<wire>/<client> ...]

The executable is the one `cargo bench -p golem-benches --bench wires_http --no-run`
prints; a client is `gemini` or `responses` with `golem`, `model` (golem's model alone),
`floor` or `json-floor`. Each client runs alone for 2,000 runs (`WIRES_PROFILE`) under
`valgrind --tool=callgrind --dump-instr=yes`; a line of code counts when it ran at least
1,000 times, so the set-up (run once) drops out and what is left is what every run goes
through. With more than one client, the lines each runs that the first does not are
counted by function. Where idle cores halt between requests, wall time follows these lines
more than the instructions (docs/benchmarks.md, section 10).
"""

import collections
import os
import re
import subprocess
import sys
import tempfile

RUNS = 2_000
EVERY_RUN = RUNS // 2
NAMED = re.compile(r"(ob|fn|cob|cfn)=\((\d+)\)(?: (.*))?$")


def profile(executable, client, out):
    """Runs `client` alone under callgrind, its profile written to `out`."""
    env = dict(os.environ, WIRES_PROFILE=client)
    subprocess.run(
        ["valgrind", "--tool=callgrind", "--dump-instr=yes",
         f"--callgrind-out-file={out}", executable, "--bench", "none"],
        env=env, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


def code_lines(path):
    """The instructions per run, and each line of code run on every run, with its function."""
    names = {"ob": {}, "fn": {}}
    obj = function = None
    address = 0
    call_cost = False
    lines = {}
    total = 0
    with open(path) as profile_file:
        for text in profile_file:
            text = text.rstrip("\n")
            if not text:
                continue
            if text.startswith("summary:"):
                total = int(text.split()[1])
                continue
            if text[0].isalpha():
                named = NAMED.match(text)
                if named:
                    kind, number, name = named.groups()
                    table = names[kind[-2:]]
                    if name:
                        table[number] = name
                    if kind == "ob":
                        obj = table[number]
                    elif kind == "fn":
                        function = table[number]
                elif text.startswith("calls="):
                    # The next cost line is the call's, the callee's cost included.
                    call_cost = True
                continue
            if text[0] not in "0+-*":
                continue
            fields = text.split()
            position = fields[0]
            if position.startswith("0x"):
                address = int(position, 16)
            elif position[0] in "+-":
                address += int(position)
            if call_cost:
                call_cost = False
                continue
            if len(fields) >= 3 and int(fields[2]) >= EVERY_RUN:
                lines.setdefault((obj, address >> 6), function)
    return total / RUNS, lines


def main():
    if len(sys.argv) < 3:
        sys.exit(__doc__)
    executable, clients = sys.argv[1], sys.argv[2:]
    measured = []
    with tempfile.TemporaryDirectory() as work:
        for index, client in enumerate(clients):
            out = os.path.join(work, f"{index}.callgrind")
            profile(executable, client, out)
            instructions, lines = code_lines(out)
            measured.append((client, lines))
            print(f"{client}: {instructions:,.0f} instructions and {len(lines):,} lines of "
                  "code a run")
    first, base = measured[0]
    for client, lines in measured[1:]:
        extra = collections.Counter(
            function for line, function in lines.items() if line not in base)
        print(f"\n{client} runs {sum(extra.values()):,} lines that {first} does not; "
              "the functions with the most:")
        for function, count in extra.most_common(25):
            print(f"{count:6,}  {function}")


if __name__ == "__main__":
    main()
