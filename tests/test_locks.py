"""A cache entry is made by one process at a time: the others wait, then find it made."""

import threading
import time

from cod.locks import exclusive


def test_a_second_maker_waits_for_the_first(tmp_path):
    folder, events = tmp_path / "models" / "gemma", []

    def second():
        with exclusive(folder):
            events.append("second")

    with exclusive(folder):
        waiter = threading.Thread(target=second)
        waiter.start()
        time.sleep(0.3)
        events.append("first done")
    waiter.join(timeout=10)
    assert events == ["first done", "second"]
    assert (tmp_path / "models" / ".gemma.lock").exists() and not folder.exists()  # the lock file, beside it


def test_the_lock_is_free_after_an_error(tmp_path):
    folder, done = tmp_path / "pkg", []
    try:
        with exclusive(folder):
            raise ValueError("conversion failed")
    except ValueError:
        pass

    def again():
        with exclusive(folder):
            done.append(True)

    waiter = threading.Thread(target=again)
    waiter.start()
    waiter.join(timeout=5)
    assert done == [True]
