/*
 * Delivery turns that nest and feed back (Sources/SluiceCore/Internal/DeliveryContext.swift,
 * DeliveryTurn.swift, MergeCore.swift, and the subject's turn at the level of who holds it),
 * checked exhaustively by spin. What this model covers and what it leaves to SubjectTurn.pml is
 * in Models/README.md.
 *
 * The pipeline of the feedback deadlock (issue 37): subjects E0 and E1 feed a merge EM; the
 * merge's subscriber sends a value back into E1 for the first value of each sender (from inside
 * its delivery). Thread T0 sends S values into E0, thread T1 S values into E1, each from a call
 * of its own; with NT = 3, thread T2 sends S values into E0 too (so that a subject's holder
 * delivers another thread's values into the merge). Every engine takes turns as DeliveryTurn does, under its lock: a thread that finds
 * the engine free takes the turn (and, with it, grants reserved from its call's allowance); its
 * own arrival while it delivers (actively) is queued; another thread's is queued on a grant
 * while no waiter is queued, else as a waiter. A waiter outside any delivery (depth 0) blocks; a
 * waiter inside one defers: its call goes on, and it comes back to the waiter when its outermost
 * turn ends. The holder delivers a waiter's item for it while its call's allowance lasts (its
 * own thread's for nothing), else passes the turn to it, which takes it when it comes back.
 * While a waiter is queued nothing is queued without one — no grant, and not even the holder's
 * own arrival — so a turn handed to a waiter inherits nothing it must deliver. Turns end by
 * giving unused grants back to the allowance.
 *
 * RELEASE: a value released as a thread comes back to a deferred waiter (a value the resolved
 * waiter kept, whose deinit sends: DeliveryContext.resumeDeferred) sends one value into the
 * thread's own subject, once per thread, holding no turn: like any send made while the thread
 * must not block (DeliveryContext.mustNotBlock), it is deferred if it must wait, and the loop
 * comes back to it. Nothing runs between a sender queuing its own waiter and blocking on it
 * (SubjectCore.sendLocked releases the value it replaced after its wait, FanInCore.receive
 * likewise): the mutant release-in-the-wait-window puts such a send there, blocking, as the
 * code did. (A send that blocked while coming back to deferred waiters failed in
 * the code through the one semaphore all of a thread's waiters signal — it took another
 * waiter's signal for its own — which this model, one state per waiter, does not represent:
 * ResumingDeferredTests covers it.)
 *
 * Checked (spin -a; ./pan): no deadlock — every call returns (no invalid end state: every
 * blocked or deferred waiter is granted or dismissed, every turn handed over is taken); every value
 * (senders' and fed back) reaches the subscriber exactly once and each source's in order
 * (assert); one call delivers at most BOUND values of other threads to the subscriber, however
 * the turns nest (assert; BOUND = A, the call's allowance); at the end every engine is free and
 * empty, every context outside any delivery.
 */
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
#ifndef NT
#define NT 2             /* threads: T0 and T2 send into E0, T1 into E1 */
#endif
#ifndef RELEASE
#define RELEASE 0
#endif
#define W 4              /* waiter slots per thread */
#define QMAX (NT * S + NT + 2 + NT)
#define EM 2             /* the merge */
#define FB NT            /* the source of values fed back */
#define RL (NT + 1)      /* the source of thread t's released value: RL + t */

typedef Engine {
  byte holder;           /* thread + 1; 0: free */
  byte grants;
  byte waiters;
  bit lock;
  byte qsrc[QMAX];
  byte qseq[QMAX];
  byte qw[QMAX];         /* waiter slot + 1; 0: no waiter */
  byte head;
  byte tail
}
Engine e[3];

/* Per-thread delivery contexts. */
byte depth[NT];
byte allowance[NT];
bit resuming[NT];
byte others[NT];

/* Waiter slots: thread t's slot k is t * W + k. */
#define WFREE 0
#define WAITING 1
#define GRANTED 2
#define DISMISSED 3
byte wstate[NT * W];
byte wengine[NT * W];
byte wsrc[NT * W];       /* the item handed to it with the turn */
byte wseq[NT * W];

byte delivered[2 * NT + 1];  /* next sequence number expected from each source */
bit relSent[NT];         /* the thread's released value was sent (RELEASE) */
byte fbNext = 0;         /* values fed back so far */
byte fbOwner[NT];        /* the thread whose delivery fed each back */

#define RQUEUED 0
#define RRUN 1
#define RWAIT 2

inline lockE(l_x) { atomic { e[l_x].lock == 0 -> e[l_x].lock = 1 } }
inline unlockE(u_x) { e[u_x].lock = 0 }

/* DeliveryContext.enter(): a call begins (fresh allowance) when no turn is held and the thread
   is not coming back to deferred waiters. */
inline enter(en_me) {
  d_step {
    if
    :: depth[en_me] == 0 && !resuming[en_me] -> allowance[en_me] = A
    :: else -> skip
    fi;
    depth[en_me]++
  }
}

/* The turn's grants, reserved from the holder's allowance. */
inline reserve(rs_x, rs_me) {
  if
  :: allowance[rs_me] >= K -> e[rs_x].grants = K; allowance[rs_me] = allowance[rs_me] - K
  :: else -> e[rs_x].grants = allowance[rs_me]; allowance[rs_me] = 0
  fi
}

/* The item reaches the subscriber (ghost checks), and the first value of each sender is fed
   back into E1 from inside the delivery (fb = 1: the caller sends it). */
inline sink(sk_ss, sk_sq, sk_me) {
  d_step {
    assert(delivered[sk_ss] == sk_sq);         /* once, in order */
    delivered[sk_ss]++;
    if
    :: (sk_ss < FB && sk_ss != sk_me) || (sk_ss == FB && fbOwner[sk_sq] != sk_me) || (sk_ss >= RL && sk_ss - RL != sk_me) ->
       others[sk_me]++; assert(others[sk_me] <= BOUND)
    :: else -> skip
    fi;
    if
    :: sk_ss < FB && sk_sq == 0 -> fb = 1; fbOwner[fbNext] = sk_me; fbSeq = fbNext; fbNext++
    :: else -> fb = 0
    fi
  }
}

/* An item arrives at engine x from thread me (DeliveryTurn.arrived): result RRUN (me holds the
   turn now: run it), RQUEUED, or RWAIT (a waiter in slot ws). */
inline arrive(ar_x, ar_as, ar_aq, ar_me, ar_result, ar_ws) {
  lockE(ar_x);
  e[ar_x].qsrc[e[ar_x].tail] = ar_as; e[ar_x].qseq[e[ar_x].tail] = ar_aq; e[ar_x].qw[e[ar_x].tail] = 0;
  e[ar_x].tail++;
  if
  :: e[ar_x].holder == 0 ->
     e[ar_x].holder = ar_me + 1; enter(ar_me); reserve(ar_x, ar_me); ar_result = RRUN
  :: e[ar_x].holder == ar_me + 1 && e[ar_x].waiters == 0 -> ar_result = RQUEUED
  :: else ->
     if
     :: e[ar_x].grants > 0 && e[ar_x].waiters == 0 -> e[ar_x].grants--; ar_result = RQUEUED
     :: else ->
        ar_ws = 0;
        do
        :: ar_ws < W && wstate[ar_me * W + ar_ws] != WFREE -> ar_ws++
        :: else -> break
        od;
        assert(ar_ws < W);
        ar_ws = ar_me * W + ar_ws;
        wstate[ar_ws] = WAITING; wengine[ar_ws] = ar_x;
        e[ar_x].qw[e[ar_x].tail - 1] = ar_ws + 1; e[ar_x].waiters++;
        ar_result = RWAIT
     fi
  fi;
  unlockE(ar_x)
}

/* The holder's next step at engine x (DeliveryTurn.waiterNext and the owner's FIFO): an item to
   deliver (step = 1, in ns/nq; a waiter's item delivered for it is dismissed after), the turn
   passed to a waiter (step = 2), or the turn ended (step = 0; unused grants given back). */
inline next(nx_x, nx_me, nx_step, nx_ns, nx_nq, nx_nw) {
  lockE(nx_x);
  if
  :: e[nx_x].head == e[nx_x].tail ->
     e[nx_x].holder = 0;
     allowance[nx_me] = allowance[nx_me] + e[nx_x].grants; e[nx_x].grants = 0;
     e[nx_x].head = 0; e[nx_x].tail = 0;
     nx_step = 0
  :: else ->
     d_step {
       nx_ns = e[nx_x].qsrc[e[nx_x].head]; nx_nq = e[nx_x].qseq[e[nx_x].head]; nx_nw = e[nx_x].qw[e[nx_x].head];
       e[nx_x].qsrc[e[nx_x].head] = 0; e[nx_x].qseq[e[nx_x].head] = 0; e[nx_x].qw[e[nx_x].head] = 0;
       e[nx_x].head++
     };
     if
     :: nx_nw == 0 -> nx_step = 1
     :: nx_nw != 0 ->
        e[nx_x].waiters--;
        if
        :: (nx_nw - 1) / W == nx_me -> nx_step = 1                    /* its own waiter: free */
        :: (nx_nw - 1) / W != nx_me && allowance[nx_me] > 0 -> allowance[nx_me]--; nx_step = 1
        :: (nx_nw - 1) / W != nx_me && allowance[nx_me] == 0 ->
           e[nx_x].holder = (nx_nw - 1) / W + 1;   /* handed to it */
           allowance[nx_me] = allowance[nx_me] + e[nx_x].grants; e[nx_x].grants = 0;
           wsrc[nx_nw - 1] = nx_ns; wseq[nx_nw - 1] = nx_nq;
           nx_step = 2
        fi
     fi
  fi;
  unlockE(nx_x)
}

/* After a step-1 delivery of a waiter's item: the waiter is dismissed. */
inline dismissIf(di_nw) {
  if
  :: di_nw != 0 -> wstate[di_nw - 1] = DISMISSED; di_nw = 0
  :: else -> skip
  fi
}

/* A waiter handed the turn at engine x takes it (resumed: enter, reserve) and delivers its own
   item first. */
inline takeTurn(tt_x, tt_me, tt_slot) {
  lockE(tt_x); enter(tt_me); reserve(tt_x, tt_me); unlockE(tt_x)
}

/* E1 run at level 2 (inside the merge's delivery, feedback): its items go into the merge, which
   this thread holds actively: queued as its own, or — while a waiter is queued there — as a
   deferred waiter of its own (so that nothing it cannot hand on waits behind a waiter). */
inline runE1Nested(r2_me) {
  do
  :: next(1, r2_me, st2, s2, q2, w2);
     if
     :: st2 == 1 ->
        arrive(EM, s2, q2, r2_me, r3, ws3);
        assert(r3 != RRUN);   /* the merge is this thread's: queued, or deferred behind a waiter */
        dismissIf(w2);
        atomic { s2 = 0; q2 = 0 }
     :: st2 == 2 -> wstate[w2 - 1] = GRANTED; atomic { w2 = 0; s2 = 0; q2 = 0 }; break
     :: st2 == 0 -> break
     fi
  od;
  depth[r2_me]--
}

/* Sends a value fed back into E1 from inside the merge's delivery (level 2). */
inline feedBack(fb_me) {
  arrive(1, FB, fbSeq, fb_me, r2, ws2);
  if
  :: r2 == RRUN -> runE1Nested(fb_me)
  :: r2 == RQUEUED -> skip
  :: r2 == RWAIT -> skip                  /* inside a delivery: deferred */
  fi;
  atomic { fb = 0; fbSeq = 0; r2 = 0; ws2 = 0 }
}

/* The merge run at level 1 (inside a subject's delivery, or resumed): items to the
   subscriber. */
inline runMerge(rm_me) {
  do
  :: next(EM, rm_me, st1, s1, q1, w1);
     if
     :: st1 == 1 ->
        sink(s1, q1, rm_me); dismissIf(w1);
        if
        :: fb -> feedBack(rm_me)
        :: else -> skip
        fi;
        atomic { s1 = 0; q1 = 0 }
     :: st1 == 2 -> wstate[w1 - 1] = GRANTED; atomic { w1 = 0; s1 = 0; q1 = 0 }; break
     :: st1 == 0 -> break
     fi
  od;
  depth[rm_me]--
}

/* A subject's item delivered into the merge (level 1). */
inline intoMerge(im_is, im_iq, im_me) {
  arrive(EM, im_is, im_iq, im_me, r1, ws1);
  if
  :: r1 == RRUN -> runMerge(im_me)
  :: r1 == RQUEUED -> skip
  :: r1 == RWAIT -> skip                  /* inside a delivery: deferred */
  fi;
  atomic { r1 = 0; ws1 = 0 }
}

/* A subject x run at level 0 (a call's own turn, or resumed). */
inline runSubject(rsub_x, rsub_me) {
  do
  :: next(rsub_x, rsub_me, st0, s0, q0, w0);
     if
     :: st0 == 1 -> intoMerge(s0, q0, rsub_me); dismissIf(w0); atomic { s0 = 0; q0 = 0 }
     :: st0 == 2 -> wstate[w0 - 1] = GRANTED; atomic { w0 = 0; s0 = 0; q0 = 0 }; break
     :: st0 == 0 -> break
     fi
  od;
  depth[rsub_me]--
}

/* A granted waiter takes its turn: its item first, then the engine's queue. */
inline resume(res_slot, res_me) {
  if
  :: wengine[res_slot] == EM ->
     takeTurn(EM, res_me, res_slot);
     s1 = wsrc[res_slot]; q1 = wseq[res_slot];
     sink(s1, q1, res_me);
     if
     :: fb -> feedBack(res_me)
     :: else -> skip
     fi;
     atomic { s1 = 0; q1 = 0 };
     runMerge(res_me)
  :: else ->
     takeTurn(wengine[res_slot], res_me, res_slot);
     intoMerge(wsrc[res_slot], wseq[res_slot], res_me);
     runSubject(wengine[res_slot], res_me)
  fi;
  d_step { wstate[res_slot] = WFREE; wengine[res_slot] = 0; wsrc[res_slot] = 0; wseq[res_slot] = 0 }
}

/* RELEASE: a released value's deinit sends into the thread's own subject x, holding no turn,
   while the thread comes back to its deferred waiters: it runs a free turn, is queued, or —
   it must not block — defers its wait, which the loop then comes back to. */
inline releaseSend(rl_x, rl_me) {
  if
  :: !relSent[rl_me] ->
     relSent[rl_me] = 1;
     arrive(rl_x, RL + rl_me, 0, rl_me, r4, ws4);
     if
     :: r4 == RRUN -> runSubject(rl_x, rl_me)
     :: r4 == RQUEUED -> skip
     :: r4 == RWAIT -> skip                /* must not block: deferred, like the others */
     fi;
     atomic { r4 = 0; ws4 = 0 }
  :: else -> skip
  fi
}

proctype Sender(byte me) {
  byte seq = 0, k, slot;
  byte st0, s0, q0, w0, st1, s1, q1, w1, st2, s2, q2, w2;
  byte r0, r1, r2, r3, r4, ws0, ws1, ws2, ws3, ws4, fbSeq;
  bit fb, found;
  byte mine = (me == 1 -> 1 : 0);        /* the subject this thread sends into */
  do
  :: seq < S ->
     others[me] = 0;
     arrive(mine, me, seq, me, r0, ws0);
     if
     :: r0 == RRUN -> runSubject(mine, me)
     :: r0 == RQUEUED -> skip
     :: r0 == RWAIT ->                   /* outside any delivery: block */
        skip;                            /* nothing runs before the wait */
        (wstate[ws0] != WAITING);
        if
        :: wstate[ws0] == GRANTED -> resume(ws0, me)
        :: else -> wstate[ws0] = WFREE
        fi
     fi;
     /* The outermost turn ended: come back to deferred waiters, holding nothing. */
     assert(depth[me] == 0);
     resuming[me] = 1;
     do
     :: true ->
        found = 0; k = 0;
        do
        :: k < W && wstate[me * W + k] == WFREE -> k++
        :: k < W && wstate[me * W + k] != WFREE -> found = 1; break
        :: k == W -> break
        od;
        if
        :: !found -> break
        :: found ->
           /* wait until one of them is resolved, then take it */
           (wstate[me * W + 0] >= GRANTED || wstate[me * W + 1] >= GRANTED ||
            wstate[me * W + 2] >= GRANTED || wstate[me * W + 3] >= GRANTED);
           k = 0;
           do
           :: wstate[me * W + k] < GRANTED -> k++
           :: else -> break
           od;
           slot = me * W + k;
           if
           :: wstate[slot] == GRANTED -> resume(slot, me)
           :: else -> wstate[slot] = WFREE
           fi;
           if
           :: RELEASE -> releaseSend(mine, me)   /* what the resolved waiter kept, released */
           :: else -> skip
           fi
        fi
     od;
     resuming[me] = 0;
     d_step { seq++; others[me] = 0; allowance[me] = 0; r0 = 0; ws0 = 0; k = 0; slot = 0;
              found = 0 }
  :: else -> break
  od
}

init {
  byte x;
  atomic {
    for (x : 0 .. NT - 1) { run Sender(x) }
  }
  _nr_pr == 1;
  for (x : 0 .. NT - 1) { assert(delivered[x] == S && delivered[RL + x] == relSent[x]) }
  assert(delivered[FB] == fbNext && fbNext == NT);
  for (x : 0 .. 2) {
    assert(e[x].holder == 0 && e[x].head == e[x].tail && e[x].waiters == 0 && e[x].lock == 0)
  }
  assert(depth[0] == 0 && depth[1] == 0)
}
