"""test_host.py's refusals: bad arguments refused on every rank alike
(agreed), a signal during a collective deferred, a comm destroyed while a
window is alive."""
import os
import signal
import threading
import time

import symheap
from pytest_harness import check, raises


def agreed_refusal(comm, what, bad_call, good_call, bad=None):
    """bad_call on one rank, good_call on the others: every rank gets the
    same InvalidArgError at once (not after the timeout), naming the rank
    that refused, and the comm's next calls still pair."""
    bad = comm.size - 1 if bad is None else bad
    t0 = time.monotonic()
    e = raises(symheap.InvalidArgError,
               bad_call if comm.rank == bad else good_call)
    took = time.monotonic() - t0
    check(took < 5, "%s: refused after %.1f s (a timeout)" % (what, took))
    if comm.rank != bad:
        check(e.message.startswith("rank %d: " % bad), "%s: %s" % (what, e))
    got = comm.allgather(b"%04d" % comm.rank)
    check(got == [b"%04d" % r for r in range(comm.size)],
          "%s: the next allgather got %r" % (what, got))
    return e


def case_refusals_agreed(comm):
    """Issue 28 item 5: a bad argument on one rank fails the collective on
    every rank, at once, and the comm stays usable and in step."""
    agreed_refusal(comm, "split('x')", lambda: comm.split("x"),
                   lambda: comm.split(0))
    agreed_refusal(comm, "split(2**32-1)", lambda: comm.split(2**32 - 1),
                   lambda: comm.split(1))
    agreed_refusal(comm, "split key 2**31", lambda: comm.split(0, 2**31),
                   lambda: comm.split(0, 0), bad=0)
    agreed_refusal(comm, "split(1.5)", lambda: comm.split(1.5),
                   lambda: comm.split(1))
    e = agreed_refusal(comm, "allgather(str)", lambda: comm.allgather("ab"),
                       lambda: comm.allgather(b"ab"))
    check(comm.rank != comm.size - 1 or "not str" in e.message, e.message)
    agreed_refusal(comm, "allgather(int)", lambda: comm.allgather(7),
                   lambda: comm.allgather(bytes(7)), bad=0)
    e = agreed_refusal(comm, "empty(2**62+4)",
                       lambda: comm.empty(2**62 + 4, "float32"),
                       lambda: comm.empty(16, "float32"))
    check(comm.rank != comm.size - 1 or "size_t" in e.message, e.message)
    agreed_refusal(comm, "empty(-1)", lambda: comm.empty(-1),
                   lambda: comm.empty(16), bad=0)
    if comm.heap_info()["enabled"]:
        before = comm.heap_info()
        agreed_refusal(comm, "heap_reserve(2**64)",
                       lambda: comm.heap_reserve(2**64),
                       lambda: comm.heap_reserve(0))
        agreed_refusal(comm, "heap_reserve(-1)",
                       lambda: comm.heap_reserve(-1),
                       lambda: comm.heap_reserve(4096), bad=0)
        agreed_refusal(comm, "heap_reserve('1')",
                       lambda: comm.heap_reserve("1"),
                       lambda: comm.heap_reserve(4096))
        check(comm.heap_info() == before, "a refused heap_reserve changed "
              "the heap")
    # The same bad integer on every rank: refused, never truncated.
    e = raises(symheap.InvalidArgError, comm.split, 2**32 - 1)
    check("out of range" in e.message, e.message)
    e = raises(symheap.InvalidArgError, comm.empty, (2**62 + 4,), "float32")
    check("size_t" in e.message, e.message)
    with comm.empty(4) as w:
        raises(symheap.InvalidArgError, w.peer, 2**32)
    raises(symheap.InvalidArgError, comm.world_rank, 2**32)
    check(comm.stats()["windows_live"] == 0, "windows left")


def interrupted(comm, victim, call, signal_at):
    """call() on every rank; on `victim` a SIGINT lands at signal_at
    ("agreed": just after the argument agreement, before the C call;
    a number: that many seconds into the call, while it waits for the
    others, who start 1 s late).  The KeyboardInterrupt must come out at
    the end, with what the call made as .symheap_result."""
    orig, orig_ag = comm._agree, comm._allgather
    timers = []
    if comm.rank == victim and signal_at == "agreed":
        def agree_then_interrupt(local):
            orig(local)
            signal.raise_signal(signal.SIGINT)
        comm._agree = agree_then_interrupt
    elif comm.rank == victim:
        # Armed from inside the call's first exchange (however slow this
        # rank is to get there), it fires while the exchange waits for the
        # others.
        def allgather_then_interrupt(data):
            del comm._allgather  # once
            t = threading.Timer(signal_at, os.kill,
                                (os.getpid(), signal.SIGINT))
            timers.append(t)
            t.start()
            return orig_ag(data)
        comm._allgather = allgather_then_interrupt
    elif signal_at != "agreed":
        time.sleep(1.0)
    try:
        got = call()
        check(comm.rank != victim, "no KeyboardInterrupt")
    except KeyboardInterrupt as e:
        check(comm.rank == victim, "KeyboardInterrupt on rank %d" %
              comm.rank)
        check(hasattr(e, "symheap_result"), "the interrupt came before the "
              "call's end (no .symheap_result)")
        got = e.symheap_result
    finally:
        comm.__dict__.pop("_agree", None)
        comm.__dict__.pop("_allgather", None)
        for t in timers:
            t.join()
    check(signal.getsignal(signal.SIGINT) is signal.default_int_handler,
          "the SIGINT handler was not restored")
    return got


def case_interrupt_deferred(comm):
    """Issue 28 item 5: a SIGINT between the agreement and the C call (or
    during either) leaves every rank in step."""
    victim = comm.size - 1
    for at in ("agreed", 0.1):
        live = comm.stats()["windows_live"]
        w = interrupted(comm, victim, lambda: comm.empty(64, "int32"), at)
        check(isinstance(w, symheap.Window), "empty gave %r" % (w,))
        n = comm.allgather(b"%d" % comm.stats()["windows_live"])
        check(n == [b"%d" % (live + 1)] * comm.size,
              "windows live per rank: %r" % n)
        w.local[:] = comm.rank
        comm.barrier()
        check((w.peer(victim) == victim).all(), "window not shared")
        comm.barrier()
        w.free()
        sub = interrupted(comm, victim, lambda: comm.split(0, comm.rank), at)
        check(isinstance(sub, symheap.Comm) and sub.size == comm.size,
              "split gave %r" % (sub,))
        sub.destroy()
    g = interrupted(comm, 0, lambda: comm.allgather(b"%d" % comm.rank),
                    "agreed")
    check(g == [b"%d" % r for r in range(comm.size)], "allgather %r" % g)
    check(comm.stats()["windows_live"] == 0, "windows left")


def case_destroy_refused(comm):
    c2 = comm.split(0, comm.rank)
    w = c2.empty(16)
    keep = w.local if comm.rank == comm.size - 1 else None
    e = raises(symheap.InvalidArgError, c2.destroy)
    check("alive" in e.message or "rank" in e.message, e.message)
    del keep
    c2.destroy()  # the window goes with it
    check(w._h is None, "window outlived its comm")
