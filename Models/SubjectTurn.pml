/*
 * A subject's delivery turn (Sources/SluiceCore/Subjects/SharedSubscriberList.swift and
 * SubjectCore.swift), as implemented, checked exhaustively by spin. What this model covers and
 * what it leaves to others is in Models/README.md.
 *
 * N sender threads each send S values to one subject, each from a call of its own (outside any
 * delivery). A value is "delivered" when the thread holding the turn hands it to the subscriber
 * (one subscriber stands for all: every queued item goes to the list captured with it). Modelled
 * step by step where the code uses atomics, and under `lock` where it locks:
 * - the turn word `reader` (its holder part `holder`, and its `pending` bit): a claim is one
 *   compare-and-swap from "free, nothing pending"; a give-back is one compare-and-swap from the
 *   value held to free, which fails while `pending` is set (the holder then keeps the turn and
 *   runs the queue);
 * - grants: the holder offers grants reserved from its call's allowance, then publishes its
 *   identity (`readerThread`); a hand-off under the lock first sets `pending` (a
 *   read-modify-write that tells it whether anyone holds the turn), and if so takes a grant only
 *   if the holder's identity is published and no waiter is queued, else queues a waiter; if
 *   nobody holds the turn, it takes it to run its own work;
 * - the holder runs the queue: a waiter's value is delivered for it while the holder's call has
 *   allowance (or it is the holder's own), else the turn passes to it (grants withdrawn)
 *   and the waiter, taking it, offers grants of its own; when the queue is empty the holder
 *   clears `pending` and gives its unused grants back;
 * - REENTRANT: sender 0's first value, delivered, sends one value more from inside the delivery
 *   (queued behind, never nested);
 * - COMPLETE: sender N-1, after its values, sends the completion (handed over in order, or
 *   delivered at once if nobody holds the turn); later sends find no subscriber (the stale
 *   check of a claim that raced the completion included);
 * - CANCEL: a canceller cancels the subscriber once: if a sender of another thread may be
 *   delivering, the release of the subscriber is handed to the turn (out of order), else it is
 *   released at once.
 * - REPLAY: a thread of its own requests a replay (SubjectCore.withReplayTurn, claimTurn,
 *   endReplay, ReplayWaiter.pause/withdraw/resume): it takes a free turn for it; or, with the
 *   turn held, queues a replay waiter, replays at once without the turn (a delivery of its own),
 *   then, under the lock, withdraws the waiter — or, if the holder reached it meanwhile, resumes
 *   the holder, which waits there holding the turn (the waiter still counted as queued, so no
 *   grant is taken meanwhile). The replayer never takes the turn from the holder. Values
 *   delivered to the subscriber by others while the replay runs (in the code: queued for the
 *   replaying subscriber, which delivers up to its allowance of them and hands the rest back to
 *   the holder — not modelled: the count is what the holder queued) are counted: at most RBOUND.
 *   REPLAYSEND: the replay's subscriber sends one value into the subject from inside the replay
 *   (queued as the turn's own if the turn is the replayer's, else handed over — as a waiter,
 *   deferred, behind the replay waiter).
 *
 * Checked (spin -a; ./pan): every value accepted (sent before the completion) is delivered
 * exactly once, each sender's in order (assert in deliver); nothing reaches the subscriber after
 * the completion or after its release, and the release waits for a delivery in flight; the
 * completion and the release happen exactly once; every call returns (no invalid end state: a
 * waiter is always granted its turn or dismissed, nothing is stranded); one call delivers at most
 * BOUND values of other threads (assert; BOUND = A, the call's allowance, plus one for the
 * re-entrant value a holder may leave behind a waiter it hands the turn to); at the end nothing
 * is queued, pending or held; the replay's waiter is withdrawn, or paused and resumed.
 */
#ifndef N
#define N 3
#endif
#ifndef S
#define S 2
#endif
#ifndef K
#define K 1
#endif
#ifndef A
#define A (2 * K)
#endif
#ifndef BOUND
#define BOUND A
#endif
#ifndef CANCEL
#define CANCEL 0
#endif
#ifndef REENTRANT
#define REENTRANT 1
#endif
#ifndef COMPLETE
#define COMPLETE 1
#endif
#ifndef REPLAY
#define REPLAY 0
#endif
#ifndef RBOUND
#define RBOUND (K + N)   /* the turn's grants, and one value per sender (its own or its waiter's) */
#endif
#define QMAX (N * S + 5)
#define RE N             /* the re-entrant value's "sender" */
#define C (N + 1)        /* the canceller's thread */
#define RP (N + 2)       /* the replaying thread */
#define RS (N + 3)       /* the value the replay's subscriber sends from inside the replay */
#ifndef REPLAYSEND
#define REPLAYSEND 0
#endif

#define FREE 0
#define CLAIMED 1        /* a storage address */
#define DRAINING 2

byte holder = FREE;      /* the turn word: holder part ... */
bit pending = 0;         /* ... and pending bit (one atomic word in the code) */
byte readerThread = 0;   /* holder + 1; 0: not published */
bit lock = 0;
byte grants = 0;
byte waitersQueued = 0;
bit listEmpty = 0;       /* the completion emptied the subscriber list */

#define VALUE 1
#define WAITER 2
#define COMPLETION 3
#define RELEASE 4
#define TURNW 5          /* the replay's turn waiter */
byte qkind[QMAX];
byte qsender[QMAX];
byte qseq[QMAX];
byte qhead = 0;
byte qtail = 0;

bit granted[N + 4];
bit dismissed[N + 4];
byte delivered[N + 4];   /* next sequence number expected from each sender (RE: re-entrant) */
byte sent[N + 4];        /* values accepted (sent before the completion) */
byte others[N + 4];      /* values of other threads delivered in the current call */
byte allowance[N + 4];
byte reSender = 255;     /* the thread whose delivery sent the re-entrant value */
bit reDeferred = 0;      /* ... as a waiter of its own, deferred (a waiter was queued then) */
bit reGranted = 0;
bit reDismissed = 0;
bit completed = 0;       /* the subscriber received the completion */
bit cancelled = 0;       /* the conduit's fast word closed */
bit released = 0;        /* the subscriber was released */
byte delivering = 0;     /* the thread delivering to the subscriber now + 1 */
byte turnState = 0;      /* the replay's waiter: 0 waiting, 1 paused, 2 resumed, 3 withdrawn */
bit replaying = 0;       /* the replay runs without the turn */
byte duringReplay = 0;   /* values others delivered meanwhile */
bit replayDone = 0;      /* the replay's call returned */
bit rsDeferred = 0;      /* the replay's send waits, deferred to the end of its call */

inline acquire() { atomic { lock == 0 -> lock = 1 } }
inline release() { lock = 0 }

inline enqueue(ek, es, eq) {
  qkind[qtail] = ek; qsender[qtail] = es; qseq[qtail] = eq; qtail++
}

/* One value to the subscriber (a cancelled conduit drops it; a released one is never reached). */
inline deliver(ds, dq, dme) {
  if
  :: !cancelled ->
     d_step {                            /* the checks: ghost state, no other thread's step */
       assert(!released && !completed);  /* nothing reaches the subscriber after either */
       delivering = dme + 1;
       assert(delivered[ds] == dq);      /* once, in order */
       delivered[ds]++;
       if
       :: replaying -> duringReplay++; assert(duringReplay <= RBOUND)
       :: else -> skip
       fi;
       if
       :: (ds != RE && ds != RS && ds != dme) || (ds == RE && reSender != dme) || (ds == RS && dme != RP) ->
          others[dme]++; assert(others[dme] <= BOUND)
       :: else -> skip
       fi
     };
     /* the re-entrant send: from inside the delivery of sender 0's first value: queued behind
        (pending set) — or, while a waiter is queued, as a waiter of the holder's own, deferred
        to the end of its call; after the completion was sent it finds no subscriber */
     if
     :: REENTRANT && ds == 0 && dq == 0 ->
        acquire();
        if
        :: !listEmpty && waitersQueued == 0 ->
           enqueue(VALUE, RE, 0); sent[RE]++; reSender = dme; pending = 1
        :: !listEmpty && waitersQueued > 0 ->
           enqueue(WAITER, RE, 0); waitersQueued++; sent[RE]++; reSender = dme; reDeferred = 1;
           pending = 1
        :: else -> skip
        fi;
        release()
     :: else -> skip
     fi;
     delivering = 0
  :: else -> skip
  fi
}

inline deliverCompletion() {
  assert(!completed);
  if
  :: !cancelled -> completed = 1
  :: else -> skip
  fi
}

inline runRelease() { assert(!released && delivering == 0); released = 1 }

/* beginTurn: grants reserved from the call's allowance, then the identity published. */
inline beginTurn(bme) {
  if
  :: allowance[bme] >= K -> grants = K; allowance[bme] = allowance[bme] - K
  :: else -> grants = allowance[bme]; allowance[bme] = 0
  fi;
  readerThread = bme + 1
}

inline withdrawGrants(wme) { allowance[wme] = allowance[wme] + grants; grants = 0 }

/* runHandedOver: until the queue is empty (passed = 0) or the turn passes to a waiter. */
inline runQueue(rme) {
  do
  :: acquire();
     if
     :: qhead == qtail -> pending = 0; withdrawGrants(rme); release(); passed = 0; break
     :: else ->
        d_step {
          kind = qkind[qhead]; s = qsender[qhead]; q = qseq[qhead];
          qkind[qhead] = 0; qsender[qhead] = 0; qseq[qhead] = 0; qhead++;
          if
          :: qhead == qtail -> qhead = 0; qtail = 0   /* as removeAll(keepingCapacity:) */
          :: else -> skip
          fi
        };
        if
        :: kind == VALUE -> release(); deliver(s, q, rme); atomic { kind = 0; s = 0; q = 0 }
        :: kind == COMPLETION -> release(); deliverCompletion(); kind = 0; s = 0
        :: kind == RELEASE -> release(); runRelease(); kind = 0; s = 0
        :: kind == TURNW ->
           atomic {                       /* ReplayWaiter.pause(), under the lock */
             if
             :: turnState == 0 -> turnState = 1; ok = 1
             :: else -> ok = 0
             fi
           }
           if
           :: ok ->                       /* paused: still counted as queued (no grants) */
              ok = 0; release(); kind = 0; s = 0; q = 0;
              (turnState == 2)            /* waitForReplay(), holding the turn */
           :: else ->                     /* withdrawn: skipped */
              waitersQueued--; release(); kind = 0; s = 0; q = 0
           fi
        :: kind == WAITER ->
           waitersQueued--;
           if
           :: s == RE -> kind = reSender      /* kind: the waiting thread, from here on */
           :: s == RS -> kind = RP
           :: else -> kind = s
           fi;
           if
           :: kind == rme || allowance[rme] > 0 ->
              if
              :: kind != rme -> allowance[rme]--
              :: else -> skip
              fi;
              release(); deliver(s, q, rme);
              if
              :: s == RE -> reDismissed = 1
              :: else -> dismissed[s] = 1
              fi;
              atomic { kind = 0; s = 0; q = 0 }
           :: else ->
              withdrawGrants(rme); holder = DRAINING; readerThread = kind + 1;
              q = s; s = 0;                     /* q: the source, for a moment */
              release();
              if
              :: q == RE -> reGranted = 1
              :: else -> granted[q] = 1
              fi;
              passed = 1; kind = 0; q = 0; break
           fi
        fi
     fi
  od
}

/* SubjectCore.leave(_:held:): the give-back's compare-and-swap fails while work is pending. */
inline leaveLoop(lme) {
  do
  :: readerThread = 0;
     atomic {
       if
       :: !pending -> holder = FREE; ok = 1
       :: else -> ok = 0
       fi
     }
     if
     :: ok -> ok = 0; break
     :: else ->
        readerThread = lme + 1;
        runQueue(lme);
        if
        :: passed -> passed = 0; break
        :: else -> skip
        fi
     fi
  od
}

/* handOff under the lock (the caller holds it, and releases it): sets pending; a free turn is
   taken (draining = 1: the caller runs the queue); else the work is queued, a value on a grant
   of the published holder while no waiter is queued, or as a waiter (waiting = 1). */
inline handOff(hk, hme, hseq, needsGrant) {
  atomic { wasFree = (holder == FREE); pending = 1 }
  if
  :: wasFree ->
     holder = DRAINING; enqueue(hk, hme, hseq); allowance[hme] = A; beginTurn(hme); draining = 1
  :: else ->
     atomic {
       /* takeGrant(): the holder's identity published (its grants before it), and no waiter */
       grantable = (waitersQueued == 0 && readerThread != 0 && grants > 0);
       if
       :: needsGrant && grantable -> grants--; waiting = 0
       :: needsGrant && !grantable -> waiting = 1
       :: !needsGrant -> waiting = 0
       fi;
       grantable = 0
     }
     if
     :: waiting -> enqueue(WAITER, hme, hseq); waitersQueued++
     :: else -> enqueue(hk, hme, hseq)
     fi
  fi
}

/* A waiter handed the turn takes it: its call's allowance (fresh for a call that waited
   before doing anything; what is left for one coming back to a deferred waiter), grants of its
   own, its value, then the queue. */
inline takeGrantedTurn(tme, ts, tseq, fresh) {
  if
  :: fresh -> allowance[tme] = A
  :: else -> skip
  fi;
  beginTurn(tme);
  deliver(ts, tseq, tme);
  leaveLoop(tme)
}

proctype Sender(byte me) {
  byte seq = 0;
  bit ok, waiting, passed, wasFree, done, draining, grantable;
  byte kind, s, q;
  do
  :: seq < S ->
     /* claim(by:): nobody attached (current == 0), then the compare-and-swap from free */
     done = 0;
     if
     :: listEmpty -> done = 1
     :: else ->
        atomic {
          if
          :: holder == FREE && !pending -> holder = CLAIMED; ok = 1
          :: else -> ok = 0
          fi
        }
     fi;
     if
     :: ok ->
        allowance[me] = A; beginTurn(me);
        if
        :: !listEmpty -> sent[me]++; deliver(me, seq, me); leaveLoop(me); done = 1
        :: else -> leaveLoop(me)            /* stale: the list changed; through the lock */
        fi
     :: else -> skip
     fi;
     if
     :: done -> skip
     :: else ->
        /* sendLocked: claimOrHandOff under the lock */
        acquire();
        if
        :: listEmpty -> release()                  /* nobody to send to */
        :: else ->
           atomic {
             if
             :: holder == FREE && !pending -> holder = CLAIMED; ok = 1
             :: else -> ok = 0
             fi
           }
           if
           :: ok ->
              allowance[me] = A; beginTurn(me); sent[me]++; release();
              deliver(me, seq, me); leaveLoop(me)
           :: else ->
              assert(readerThread != me + 1);   /* a root call holds no turn */
              sent[me]++;
              handOff(VALUE, me, seq, 1);
              release();
              if
              :: draining -> draining = 0; leaveLoop(me)   /* runs its own value */
              :: waiting ->                  /* wait: delivered for it, or its turn */
                 (granted[me] == 1 || dismissed[me] == 1);
                 if
                 :: dismissed[me] == 1 -> dismissed[me] = 0
                 :: else -> granted[me] = 0; takeGrantedTurn(me, me, seq, 1)
                 fi
              :: else -> skip                /* handed over: returns at once */
              fi
           fi
        fi
     fi;
     /* The outermost turn ended: come back to a deferred waiter of its own, holding nothing. */
     if
     :: reDeferred && reSender == me ->
        (reGranted || reDismissed);
        if
        :: reGranted -> reGranted = 0; takeGrantedTurn(me, RE, 0, 0)
        :: else -> skip
        fi;
        reDeferred = 0; reDismissed = 0
     :: else -> skip
     fi;
     /* the call is over: what it counted no longer matters (fewer states to tell apart) */
     skip;
     d_step { seq++; others[me] = 0; allowance[me] = 0; ok = 0; waiting = 0; passed = 0;
              wasFree = 0; done = 0; draining = 0 }
  :: else -> break
  od;
  /* The last sender completes the subject: handOffToReader(.completion, inOrder: true). */
  if
  :: COMPLETE && me == N - 1 ->
     acquire();
     listEmpty = 1;
     if
     :: holder == FREE -> release(); deliverCompletion()   /* nested: now (nothing waits) */
     :: else ->
        handOff(COMPLETION, me, 0, 0);
        release();
        if
        :: draining -> leaveLoop(me)
        :: else -> skip
        fi
     fi
  :: else -> skip
  fi
}

/* Conduit.cancel() from a thread of its own: the fast word closed (sequentially consistent),
   then, if a sender of another thread may be delivering, the release handed to the turn
   (handOffToReader(.release, inOrder: false)), else released at once. */
proctype Canceller() {
  bit ok, passed, wasFree, waiting, draining, grantable;
  byte kind, s, q;
  cancelled = 1;
  if
  :: holder == FREE -> runRelease()
  :: else ->
     acquire();
     if
     :: holder == FREE -> release(); runRelease()   /* nested: no sender now */
     :: else ->
        handOff(RELEASE, C, 0, 0);
        release();
        if
        :: draining -> leaveLoop(C)
        :: else -> skip
        fi
     fi
  fi
}

/* From inside the replay (a delivery of the replayer's own), its subscriber sends one value:
   claimOrHandOff — queued behind as the turn's own if the turn is the replayer's (as a waiter of
   its own, deferred, while a waiter is queued), else handed over: on a grant, or as a waiter,
   deferred (a thread inside a delivery never blocks). The turn is never free meanwhile. */
inline replaySend() {
  if
  :: REPLAYSEND ->
     acquire();
     if
     :: listEmpty -> release()
     :: !listEmpty && readerThread == RP + 1 && waitersQueued == 0 ->
        enqueue(VALUE, RS, 0); sent[RS]++; pending = 1; release()
     :: !listEmpty && readerThread == RP + 1 && waitersQueued > 0 ->
        enqueue(WAITER, RS, 0); waitersQueued++; sent[RS]++; pending = 1; rsDeferred = 1;
        release()
     :: !listEmpty && readerThread != RP + 1 ->
        sent[RS]++; handOff(VALUE, RS, 0, 1); release();
        assert(!draining); rsDeferred = waiting; waiting = 0
     fi
  :: else -> skip
  fi
}

/* A subscriber's replay requested on a thread of its own (Conduit.requestSpecialized →
   SubjectCore.withReplayTurn). */
proctype Replayer() {
  bit ok, passed, wasFree, waiting, draining, grantable;
  byte kind, s, q;
  acquire();
  /* claimTurn: not this thread's; the pending bit set by a read-modify-write, which tells */
  atomic {
    wasFree = (holder == FREE);
    if
    :: wasFree -> holder = DRAINING     /* store(draining): free, so nothing was pending */
    :: else -> pending = 1
    fi
  }
  if
  :: wasFree ->
     allowance[RP] = A; beginTurn(RP); release();
     replaying = 1; replaySend(); replaying = 0;   /* the replay, holding the turn */
     leaveLoop(RP)
  :: else ->
     enqueue(TURNW, RP, 0); waitersQueued++; release();
     allowance[RP] = A;                 /* context.enter(): its call begins */
     replaying = 1;
     replaySend();
     replaying = 0;                     /* the replay ran, without the turn */
     acquire();                         /* SharedSubscriberList.endReplay, under the lock */
     atomic {                           /* ReplayWaiter.withdraw() */
       if
       :: turnState == 0 -> turnState = 3; ok = 1
       :: else -> ok = 0
       fi
     }
     if
     :: ok -> ok = 0; release()
     :: else ->                         /* the holder waits at it: uncounted, then resumed */
        waitersQueued--; release();
        turnState = 2                   /* resume(), after unlocking */
     fi
  fi;
  /* Its outermost delivery ended: it comes back to its deferred waiters (resumeDeferred). */
  if
  :: rsDeferred ->
     (granted[RS] || dismissed[RS]);
     if
     :: granted[RS] -> granted[RS] = 0; takeGrantedTurn(RP, RS, 0, 0)
     :: else -> dismissed[RS] = 0
     fi;
     rsDeferred = 0
  :: else -> skip
  fi;
  if
  :: reDeferred && reSender == RP ->
     (reGranted || reDismissed);
     if
     :: reGranted -> reGranted = 0; takeGrantedTurn(RP, RE, 0, 0)
     :: else -> skip
     fi;
     reDeferred = 0; reDismissed = 0
  :: else -> skip
  fi;
  /* a value sent from inside the replay reached the subscribers before the call returned */
  assert(delivered[RS] == sent[RS]);
  replayDone = 1
}

init {
  byte i;
  atomic {
    for (i : 0 .. N - 1) { run Sender(i) }
    if
    :: CANCEL -> run Canceller()
    :: else -> skip
    fi;
    if
    :: REPLAY -> run Replayer()
    :: else -> skip
    fi
  }
  _nr_pr == 1;
  if
  :: !CANCEL ->
     for (i : 0 .. N) { assert(delivered[i] == sent[i]) }
     assert(delivered[RS] == sent[RS]);
     assert(sent[N - 1] == S && completed == COMPLETE)
  :: else -> assert(released)
  fi;
  assert(qhead == qtail && pending == 0 && holder == FREE && lock == 0);
  assert(waitersQueued == 0 && readerThread == 0 && !reDeferred);
  assert(!REPLAY || (replayDone && turnState != 1 && !rsDeferred))
}
