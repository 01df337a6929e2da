import os, time
class _DirStore:
    def __init__(self, path): self.path = path
    def _f(self, k): return os.path.join(self.path, k.replace("/", "_"))
    def set(self, k, v):
        with open(self._f(k) + ".tmp", "wb") as f: f.write(v)
        os.rename(self._f(k) + ".tmp", self._f(k))
    def get(self, k):
        for _ in range(4000):
            try:
                with open(self._f(k), "rb") as f: return f.read()
            except FileNotFoundError: time.sleep(0.005)
        raise TimeoutError(k)
_on = os.environ.get("FAKE_DIST") == "1"
def is_available(): return True
def is_initialized(): return _on
def get_rank(): return int(os.environ["RANK"])
def get_world_size(): return int(os.environ["WORLD_SIZE"])
class distributed_c10d:
    @staticmethod
    def _get_default_store(): return _DirStore(os.environ["FAKE_STORE"])
