"""Deferring SIGINT across a collective.

A collective of the package is several steps (an agreement on the arguments,
then the C call, then Python objects over the result).  A KeyboardInterrupt
raised between two of them would leave this rank out of step with its peers
(they made the C call, it did not).  So on the main thread the SIGINT
handler is swapped for one that only notes the signal, and the noted signal
is handed to the previous handler when the collective is over: the
KeyboardInterrupt comes out of the call after every step was made, carrying
the call's result as .symheap_result (the window or comm it made, which
every peer also holds), so that a program which catches it can free it.
"""
import os
import signal
import threading

_depth = 0  # nesting on the main thread (a collective calling another)
_pending = []  # the frames of SIGINTs noted while deferred


def _note(signum, frame):
    _pending.append(frame)


class deferred:
    """with deferred() as d: ...; d.result = value (what the call made)."""

    def __init__(self):
        self.result = None
        self._old = None
        self._active = False

    def __enter__(self):
        global _depth
        if threading.current_thread() is not threading.main_thread():
            return self  # signals reach the main thread only
        if _depth == 0:
            old = signal.getsignal(signal.SIGINT)
            if old is None:  # set outside Python: left alone
                return self
            self._old = old
            signal.signal(signal.SIGINT, _note)
        _depth += 1
        self._active = True
        return self

    def __exit__(self, *exc):
        global _depth
        if not self._active:
            return False
        _depth -= 1
        if _depth:
            return False
        signal.signal(signal.SIGINT, self._old)
        if not _pending:
            return False
        frame = _pending[-1]
        del _pending[:]
        self._deliver(frame)
        return False

    def _deliver(self, frame):
        old = self._old
        if old == signal.SIG_IGN:
            return
        if old == signal.SIG_DFL:
            os.kill(os.getpid(), signal.SIGINT)  # what it would have done
            return
        try:
            old(signal.SIGINT, frame)
        except BaseException as e:
            e.symheap_result = self.result
            raise
