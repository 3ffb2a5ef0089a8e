/*
 * The delivery-turn protocol of a subject's send (Sources/SluiceCore/Subjects/
 * SharedSubscriberList.swift and SubjectCore.swift), as implemented, checked exhaustively by spin.
 *
 * N sender threads each send S values to one subject. A value is "delivered" when the thread
 * holding the turn hands it to the subscribers (one subscriber stands for all: every queued item
 * goes to the list captured with it). The model keeps the steps the code takes with atomics and
 * the lock: the lock-free claim of `reader` (compare-and-swap), the give-back in `leave()`
 * (store, then load of `pending`: sequentially consistent, as in the code), hand-offs under the
 * lock (queue the value with a grant, or with a waiter), the raced re-claim (`claimToDrain`),
 * `runHandedOver` delivering a waiting sender's value for it while the turn's budget lasts
 * (then dismissing the waiter) and past that stopping at the waiter and handing it the turn.
 * Attaching,
 * detaching and re-entrant sends are left out (the lock serialises them with hand-offs).
 *
 * Checked (spin -a; ./pan): every value is delivered exactly once and each sender's values in
 * the order sent (assert in deliver); every call returns (no invalid end state: a waiter is
 * always granted its turn or dismissed, nothing is stranded in the queue); one call runs at most
 * BOUND items handed over by other threads (assert; BOUND = 2K + 1: K granted values, one more
 * from a raced re-claim, K waiting senders' values); at the end nothing is queued, pending or
 * held.
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
#ifndef BOUND
#define BOUND (2 * K + 1)
#endif
#define QMAX (N * S + 1)

#define FREE 0
#define CLAIMED 1
#define DRAINING 2

byte reader = FREE;
byte readerThread = 0;   /* holder + 1; 0: none */
bit pending = 0;
bit lock = 0;
byte grants = K;
byte budget = K;         /* waiting senders' values this turn still delivers for them */
byte valuesQueued = 0;   /* VALUE items in the queue */

#define VALUE 1
#define WAITER 2
byte qkind[QMAX];
byte qsender[QMAX];
byte qseq[QMAX];
byte qhead = 0;
byte qtail = 0;

bit granted[N];
bit dismissed[N];        /* the turn delivered the waiter's value for it */
byte delivered[N];       /* the next sequence number expected from each sender */
byte others[N];          /* items of other senders run in the current call */

inline acquire() { atomic { lock == 0 -> lock = 1 } }
inline release() { lock = 0 }

inline deliver(ds, dq, dme) {
  assert(delivered[ds] == dq);   /* once, in order */
  delivered[ds]++;
  if
  :: ds != dme -> others[dme]++; assert(others[dme] <= BOUND)
  :: else -> skip
  fi
}

inline enqueue(ek, es, eq) {
  qkind[qtail] = ek; qsender[qtail] = es; qseq[qtail] = eq; qtail++;
  if
  :: ek == VALUE -> valuesQueued++
  :: else -> skip
  fi
}

/* beginTurn: the grants of a new turn, less the values already queued for it */
inline beginTurn() {
  if
  :: valuesQueued >= K -> grants = 0
  :: else -> grants = K - valuesQueued
  fi;
  budget = K
}

/* runHandedOver: until the queue is empty (passed = 0) or a waiter past the budget comes first
   (passed = 1). */
inline runQueue(rme) {
  do
  :: acquire();
     if
     :: qhead == qtail -> pending = 0; release(); passed = 0; break
     :: else ->
        kind = qkind[qhead]; s = qsender[qhead]; q = qseq[qhead]; qhead++;
        if
        :: kind == WAITER && budget > 0 ->
           budget--; release(); deliver(s, q, rme); dismissed[s] = 1
        :: kind == WAITER && budget == 0 ->
           reader = DRAINING; readerThread = s + 1; beginTurn();
           release(); granted[s] = 1; passed = 1; break
        :: else -> valuesQueued--; release(); deliver(s, q, rme)
        fi
     fi
  od
}

/* SubjectCore.leave(thread:) */
inline leaveLoop(lme) {
  do
  :: if
     :: pending ->
        runQueue(lme);
        if
        :: passed -> break
        :: else -> skip
        fi
     :: else ->
        readerThread = 0;
        reader = FREE;
        if
        :: pending ->
           acquire();
           atomic {
             if
             :: qhead != qtail && reader == FREE -> reader = DRAINING; ok = 1
             :: else -> ok = 0
             fi
           }
           if
           :: ok -> readerThread = lme + 1; release()   /* the same call's turn: no new grants */
           :: else -> release(); break
           fi
        :: else -> break
        fi
     fi
  od
}

proctype Sender(byte me) {
  byte seq = 0;
  bit ok, waiting, passed;
  byte kind, s, q;
  do
  :: seq < S ->
     others[me] = 0;
     /* claim(by:) */
     atomic {
       if
       :: reader == FREE -> reader = CLAIMED; ok = 1
       :: else -> ok = 0
       fi
     }
     if
     :: ok ->
        readerThread = me + 1;
        if
        :: pending ->                       /* claimedBehind: behind the waiting work */
           acquire(); enqueue(VALUE, me, seq); pending = 1; release()
        :: else -> deliver(me, seq, me)     /* claimed: in place */
        fi;
        leaveLoop(me)
     :: else ->
        /* sendLocked: claimOrHandOff under the lock */
        acquire();
        atomic {
          if
          :: reader == FREE && qhead == qtail -> reader = CLAIMED; ok = 1
          :: else -> ok = 0
          fi
        }
        if
        :: ok ->
           readerThread = me + 1; beginTurn(); release(); deliver(me, seq, me); leaveLoop(me)
        :: else ->
           assert(!(reader != FREE && readerThread == me + 1));  /* no re-entrancy here */
           /* handOff(needsGrant: true) */
           if
           :: grants == 0 -> enqueue(WAITER, me, seq); waiting = 1
           :: else -> grants--; enqueue(VALUE, me, seq); waiting = 0
           fi;
           pending = 1;
           atomic {
             if
             :: reader == FREE -> reader = DRAINING; ok = 1
             :: else -> ok = 0
             fi
           }
           if
           :: ok ->                          /* draining: this thread runs the queue */
              readerThread = me + 1; beginTurn();
              if
              :: waiting -> qkind[qtail - 1] = VALUE; valuesQueued++; waiting = 0
              :: else -> skip
              fi;
              release(); leaveLoop(me)
           :: else ->
              release();
              if
              :: waiting ->                  /* wait: delivered for it, or its turn */
                 (granted[me] == 1 || dismissed[me] == 1);
                 if
                 :: dismissed[me] == 1 -> dismissed[me] = 0
                 :: else -> granted[me] = 0; deliver(me, seq, me); leaveLoop(me)
                 fi
              :: else -> skip                /* handed over: returns at once */
              fi
           fi
        fi
     fi;
     seq++
  :: else -> break
  od
}

init {
  byte i;
  atomic {
    for (i : 0 .. N - 1) { run Sender(i) }
  }
  _nr_pr == 1;
  for (i : 0 .. N - 1) { assert(delivered[i] == S) }
  assert(qhead == qtail && pending == 0 && reader == FREE && lock == 0)
}
