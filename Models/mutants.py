#!/usr/bin/env python3
"""The models' mutation check: a model that passes a broken protocol is a check that cannot fail.

Each mutant below is a small, deliberate break of one rule the code relies on, applied to the
model's text (the original text must be found exactly once, so a mutant that no longer applies
fails loudly instead of silently passing). For each mutant, spin is run at the listed sizes in
turn, and the mutant must be caught (errors > 0: an assertion, an invalid end state) at one of
them. Prints one line per mutant; exits 1 if any mutant survives. Run by Models/check in CI;
the mutants run $MODEL_JOBS at a time (default: the number of cores), each in a folder of its
own.

Usage: mutants.py [work-dir]
"""
import concurrent.futures
import os
import re
import shutil
import subprocess
import sys
import tempfile

# (model, name, what it breaks, original text, mutated text, sizes: list of -D flag strings)
SUBJECT_SMALL = ["-DK=1 -DN=3 -DS=2 -DREENTRANT=0 -DCOMPLETE=0",
                 "-DK=1 -DN=2 -DS=3 -DREENTRANT=1 -DCOMPLETE=1",
                 "-DK=1 -DN=3 -DS=3 -DREENTRANT=0 -DCOMPLETE=0"]
SUBJECT_CANCEL = ["-DK=1 -DN=2 -DS=2 -DCANCEL=1 -DREENTRANT=1 -DCOMPLETE=1"]
NESTED = ["-DK=1 -DS=1", "-DK=1 -DS=2", "-DK=2 -DS=2"]
NESTED_RELEASE = ["-DK=1 -DS=1 -DRELEASE=1", "-DK=1 -DS=2 -DRELEASE=1"]
# A send that blocks on waiter slot ws of thread me (as a thread outside any delivery does).
BLOCKING_SEND = ("arrive({x}, RL + {me}, 0, {me}, r4, ws4); if :: r4 == RRUN -> runSubject({x}, {me}) "
                 ":: r4 == RQUEUED -> skip :: r4 == RWAIT -> (wstate[ws4] != WAITING); if "
                 ":: wstate[ws4] == GRANTED -> resume(ws4, {me}) :: else -> wstate[ws4] = WFREE fi "
                 "fi; atomic {{ r4 = 0; ws4 = 0 }}")
REPLAY = ["-DK=1 -DN=2 -DS=3 -DREENTRANT=0 -DCOMPLETE=0 -DREPLAY=1",
          "-DK=1 -DN=2 -DS=2 -DREENTRANT=1 -DCOMPLETE=1 -DREPLAY=1 -DREPLAYSEND=1"]

MUTANTS = [
    ("SubjectTurn.pml", "no-grant-decrement", "a hand-off takes a grant without using it up",
     "grants--; waiting = 0", "waiting = 0", SUBJECT_SMALL),
    ("SubjectTurn.pml", "no-allowance-limit", "the holder delivers for every waiter, however many",
     ":: kind == rme || allowance[rme] > 0 ->", ":: 1 ->", SUBJECT_SMALL),
    ("SubjectTurn.pml", "grants-behind-a-waiter", "grants are taken while a waiter is queued",
     "grantable = (waitersQueued == 0 && readerThread != 0 && grants > 0);",
     "grantable = (readerThread != 0 && grants > 0);", SUBJECT_SMALL),
    ("SubjectTurn.pml", "unpublished-grants",
     "a grant is taken before the holder published its identity (a grant of an earlier turn)",
     "grantable = (waitersQueued == 0 && readerThread != 0 && grants > 0);",
     "grantable = (waitersQueued == 0 && grants > 0);", SUBJECT_SMALL),
    ("SubjectTurn.pml", "no-reservation", "a turn offers grants without reserving them",
     ":: allowance[bme] >= K -> grants = K; allowance[bme] = allowance[bme] - K",
     ":: allowance[bme] >= K -> grants = K", SUBJECT_SMALL),
    ("SubjectTurn.pml", "grants-kept-on-pass", "a turn handed to a waiter keeps the passer's grants",
     "withdrawGrants(rme); holder = DRAINING; readerThread = kind + 1;",
     "holder = DRAINING; readerThread = kind + 1;", SUBJECT_SMALL),
    ("SubjectTurn.pml", "give-back-ignores-pending", "the give-back succeeds with work queued",
     ":: !pending -> holder = FREE; ok = 1", ":: 1 -> holder = FREE; ok = 1", SUBJECT_SMALL),
    ("SubjectTurn.pml", "claim-ignores-pending", "a sender claims a free turn with work pending",
     "          :: holder == FREE && !pending -> holder = CLAIMED; ok = 1\n          :: else -> ok = 0\n          fi\n        }\n     fi;",
     "          :: holder == FREE -> holder = CLAIMED; ok = 1\n          :: else -> ok = 0\n          fi\n        }\n     fi;",
     SUBJECT_SMALL),
    ("SubjectTurn.pml", "delivered-but-not-dismissed", "a value delivered for a waiter, the waiter left waiting",
     ":: else -> dismissed[s] = 1", ":: else -> skip", SUBJECT_SMALL),
    ("SubjectTurn.pml", "nested-send-not-pending", "a send from inside a delivery is queued without pending",
     "enqueue(VALUE, RE, 0); sent[RE]++; reSender = dme; pending = 1",
     "enqueue(VALUE, RE, 0); sent[RE]++; reSender = dme", SUBJECT_SMALL),
    ("SubjectTurn.pml", "own-send-behind-a-waiter",
     "a send from inside the holder's delivery is queued as its own behind a waiter",
     ":: !listEmpty && waitersQueued == 0 ->\n           enqueue(VALUE, RE, 0);",
     ":: !listEmpty ->\n           enqueue(VALUE, RE, 0);",
     ["-DK=1 -DN=3 -DS=2 -DREENTRANT=1 -DCOMPLETE=0", "-DK=1 -DN=3 -DS=3 -DREENTRANT=1 -DCOMPLETE=0"]),
    ("SubjectTurn.pml", "completion-not-in-order", "the completion overtakes work handed over before it",
     ":: holder == FREE -> release(); deliverCompletion()   /* nested: now (nothing waits) */",
     ":: 1 -> release(); deliverCompletion()", SUBJECT_SMALL),
    ("SubjectTurn.pml", "release-not-deferred", "a cancel releases the subscriber while a sender delivers",
     ":: holder == FREE -> release(); runRelease()   /* nested: no sender now */",
     ":: 1 -> release(); runRelease()", SUBJECT_CANCEL),
    ("NestedTurns.pml", "waits-block-inside-deliveries",
     "a thread inside a delivery blocks for a turn (the feedback deadlock of issue 37)",
     [":: r1 == RWAIT -> skip                  /* inside a delivery: deferred */",
      ":: r2 == RWAIT -> skip                  /* inside a delivery: deferred */"],
     [":: r1 == RWAIT -> (wstate[ws1] != WAITING)",
      ":: r2 == RWAIT -> (wstate[ws2] != WAITING)"], NESTED),
    ("NestedTurns.pml", "allowance-per-turn", "every turn gets a fresh allowance (bounds multiply)",
     ":: depth[en_me] == 0 && !resuming[en_me] -> allowance[en_me] = A",
     ":: true -> allowance[en_me] = A", NESTED),
    ("NestedTurns.pml", "own-arrival-behind-a-waiter",
     "the holder's own arrival is queued as its own behind a waiter",
     ":: e[ar_x].holder == ar_me + 1 && e[ar_x].waiters == 0 -> ar_result = RQUEUED",
     ":: e[ar_x].holder == ar_me + 1 -> ar_result = RQUEUED", NESTED),
    ("NestedTurns.pml", "waiters-delivered-for-free", "delivering for another thread's waiter costs nothing",
     "allowance[nx_me] > 0 -> allowance[nx_me]--; nx_step = 1",
     "allowance[nx_me] > 0 -> nx_step = 1", NESTED),
    ("NestedTurns.pml", "deferred-waiters-forgotten", "a call returns without coming back to its deferred waiters",
     "        :: !found -> break\n        :: found ->", "        :: true -> break\n        :: found ->",
     NESTED),
    ("NestedTurns.pml", "release-in-the-wait-window",
     "a value released between queuing the sender's waiter and blocking on it sends, and blocks",
     "skip;                            /* nothing runs before the wait */",
     "if :: !relSent[me] -> relSent[me] = 1; " + BLOCKING_SEND.format(x="mine", me="me")
     + " :: else -> skip fi;", NESTED_RELEASE),
    ("SubjectTurn.pml", "replay-without-turn-waiter",
     "a replay racing another thread's turn runs without queueing a turn waiter (issue 37's slow replay)",
     "enqueue(TURNW, RP, 0); waitersQueued++; release();", "release();", REPLAY),
    ("SubjectTurn.pml", "withdraw-while-paused", "a replay withdraws its waiter though the holder waits at it",
     ":: turnState == 0 -> turnState = 3; ok = 1", ":: turnState != 3 -> turnState = 3; ok = 1", REPLAY),
    ("SubjectTurn.pml", "pause-at-withdrawn", "the holder waits at a replay's withdrawn waiter",
     ":: turnState == 0 -> turnState = 1; ok = 1", ":: turnState != 1 -> turnState = 1; ok = 1", REPLAY),
    ("SubjectTurn.pml", "holder-does-not-pause",
     "the holder goes on delivering past a replay in progress (values queue for it without bound)",
     "(turnState == 2)            /* waitForReplay(), holding the turn */", "skip", REPLAY),
    ("SubjectTurn.pml", "paused-not-counted",
     "a paused replay waiter no longer counts as queued: a send from inside the replay takes a grant",
     ["ok = 0; release(); kind = 0; s = 0; q = 0;\n", "waitersQueued--; release();\n        turnState = 2"],
     ["ok = 0; waitersQueued--; release(); kind = 0; s = 0; q = 0;\n", "release();\n        turnState = 2"],
     REPLAY),
    ("SubjectTurn.pml", "replay-send-blocks-nothing",
     "a send from inside a replay that must wait is dropped instead of deferred",
     "assert(!draining); rsDeferred = waiting; waiting = 0", "assert(!draining); waiting = 0", REPLAY),
    ("SubjectTurn.pml", "stale-claim-delivers", "a claim that raced the completion delivers anyway",
     ":: !listEmpty -> sent[me]++; deliver(me, seq, me); leaveLoop(me); done = 1",
     ":: 1 -> sent[me]++; deliver(me, seq, me); leaveLoop(me); done = 1", SUBJECT_SMALL),
]


def run(model_path, flags, workdir):
    """Runs spin on the model with the flags; returns (errors, summary)."""
    for name in os.listdir(workdir):
        if name.startswith("pan"):
            os.remove(os.path.join(workdir, name))
    generated = subprocess.run(["spin"] + flags.split() + ["-a", model_path], cwd=workdir,
                               capture_output=True, text=True)
    if generated.returncode != 0:
        return None, "spin failed: " + (generated.stdout + generated.stderr).strip()[:200]
    subprocess.run(["gcc", "-O2", "-DSAFETY", "-DCOLLAPSE", "-DMEMLIM=3000", "-o", "pan", "pan.c"],
                   cwd=workdir, check=True)
    try:
        result = subprocess.run(["./pan", "-m300000"], cwd=workdir, capture_output=True, text=True,
                                timeout=300)
    except subprocess.TimeoutExpired:
        return 0, "timed out"
    match = re.search(r"errors: (\d+)", result.stdout)
    errors = int(match.group(1)) if match else 0
    reason = re.search(r"pan:1: (.*?) \(at depth", result.stdout)
    return errors, reason.group(1) if reason else ("out of memory" if "memory" in result.stdout
                                                     else "")


def check_mutant(here, workdir, index, mutant):
    """Applies one mutant in a folder of its own and runs its sizes; returns (line, survived)."""
    model, name, what, original, mutated, sizes = mutant
    text = open(os.path.join(here, model)).read()
    # One edit, or several (lists of originals and replacements, applied in turn).
    edits = list(zip(original, mutated)) if isinstance(original, list) else [(original, mutated)]
    stale = [old for old, _ in edits if text.count(old) != 1]
    if stale:
        return (f"mutant {name}: its original text is not found exactly once in {model} "
                f"(the model changed: update the mutant): {stale[0][:60]!r}"), True
    for old, new in edits:
        text = text.replace(old, new)
    folder = os.path.join(workdir, f"mutant{index}")
    os.makedirs(folder, exist_ok=True)
    path = os.path.join(folder, "mutant-" + model)
    open(path, "w").write(text)
    for flags in sizes:
        errors, reason = run(path, flags, folder)
        if errors is None:
            return f"mutant {name}: {reason}", True
        if errors > 0:
            return f"mutant {name} ({what}): caught at {flags}: {reason}", False
    return f"mutant {name} ({what}): NOT caught at any size", True


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    workdir = sys.argv[1] if len(sys.argv) > 1 else tempfile.mkdtemp()
    jobs = int(os.environ.get("MODEL_JOBS") or os.cpu_count() or 1)
    # Each mutant in a folder of its own, `jobs` at a time; the lines print in the list's order.
    with concurrent.futures.ThreadPoolExecutor(max_workers=jobs) as pool:
        results = list(pool.map(lambda item: check_mutant(here, workdir, *item),
                                enumerate(MUTANTS)))
    survivors = []
    for (line, survived), mutant in zip(results, MUTANTS):
        print(line)
        if survived:
            survivors.append(mutant[1])
    if survivors:
        print(f"{len(survivors)} mutant(s) survived: {', '.join(survivors)}")
        sys.exit(1)
    print(f"all {len(MUTANTS)} mutants caught")


if __name__ == "__main__":
    main()
