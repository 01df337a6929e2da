def set_backend(name):
    pass
