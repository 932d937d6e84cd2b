"""weft's manager of a simulated CUDA block (``weft/runtime/cudasim.py``): the simulator's
barrier and error protocol, with the block's threads run without a spinning overseer."""
import numpy as np
import pytest

pytestmark = pytest.mark.cudasim
cuda = pytest.importorskip("numba.cuda")  # (module-level: the simulator swaps it in kernels)


@pytest.fixture(autouse=True, scope="module")
def _weft_manager():
    import numba
    if not numba.config.ENABLE_CUDASIM:
        pytest.skip("a real GPU: the simulator is not in use")
    from weft.runtime import cudasim
    from numba.cuda.simulator import kernel as sim
    cudasim.install()
    assert sim.BlockManager.run.__module__ == "weft.runtime.cudasim"


def test_barriers_order_shared_memory_rounds():
    # each round every thread reads its neighbour's value of the last round: wrong without a
    # barrier between the write and the reads of each round
    @cuda.jit
    def rounds(out):
        s = cuda.shared.array(16, np.float64)
        i = cuda.threadIdx.x
        s[i] = i
        cuda.syncthreads()
        for _ in range(5):
            v = s[(i + 1) % 16]
            cuda.syncthreads()
            s[i] = v + 1.0
            cuda.syncthreads()
        out[cuda.blockIdx.x, i] = s[i]

    out = np.zeros((3, 16))
    rounds[3, 16](out)
    want = (np.arange(16) + 5) % 16 + 5.0
    np.testing.assert_array_equal(out, np.tile(want, (3, 1)))


def test_threads_that_finish_early_do_not_hold_the_barrier():
    @cuda.jit
    def early(ones, out):
        i = cuda.threadIdx.x
        if i >= 4:
            return
        ones[i] = i + 1.0
        cuda.syncthreads()  # (the simulator counts live threads only, as numba-cuda's does)
        out[i] = ones[(i + 1) % 4]

    ones, out = np.zeros(8), np.zeros(8)
    early[1, 8](ones, out)
    np.testing.assert_array_equal(out, [2, 3, 4, 1, 0, 0, 0, 0])


def test_a_failing_thread_stops_the_block_with_its_error():
    @cuda.jit
    def fails(out):
        i = cuda.threadIdx.x
        cuda.syncthreads()
        out[i * 10] = 1.0  # thread 1 and up index past the end

    with pytest.raises(IndexError, match=r"tid=\[\d+, 0, 0\]"):
        fails[1, 4](np.zeros(4))


@cuda.jit
def _endless(flag, out):
    i = cuda.threadIdx.x
    while flag[0] == 0:  # until told: a barrier each round
        out[i] += 1.0
        cuda.syncthreads()


def test_an_interrupted_launch_stops_its_threads_at_their_next_barrier():
    """Ctrl-C (or a test runner's timeout) in the launching thread: the block's threads stop at
    their next barrier instead of running on beside whatever runs next."""
    import _thread
    import signal
    import threading
    import time
    flag = cuda.to_device(np.zeros(1, np.int32))  # (device arrays: read while they run)
    out = cuda.to_device(np.zeros(4))

    launching = threading.Event()

    def on_sigint(signum, frame):
        if launching.is_set():
            raise KeyboardInterrupt

    def interrupt():  # Ctrl-C every 0.2 s until the launch gives up: a KeyboardInterrupt raised
        time.sleep(0.5)  # in a finaliser the main thread happens to run is lost ("ignored")
        for _ in range(50):
            if not launching.is_set():
                return
            _thread.interrupt_main()
            time.sleep(0.2)
        flag[0] = 1  # never delivered (the test then fails): end the kernel rather than hang

    # our own handler (whatever a library loaded earlier made of SIGINT; interrupt_main does
    # nothing where it is ignored)
    handler = signal.signal(signal.SIGINT, on_sigint)
    timer = threading.Thread(target=interrupt, daemon=True)
    before = set(threading.enumerate())  # (other threads may end meanwhile: compare by identity)
    try:
        launching.set()
        timer.start()
        with pytest.raises(KeyboardInterrupt):
            _endless[1, 4](flag, out)
    finally:
        launching.clear()
        signal.signal(signal.SIGINT, handler)

    def started_by_the_launch():
        return [t for t in threading.enumerate() if t not in before and t is not timer]

    deadline = time.monotonic() + 10
    while started_by_the_launch() and time.monotonic() < deadline:
        time.sleep(0.01)
    assert started_by_the_launch() == []  # the block's threads have ended
    rounds = out.copy_to_host()
    assert rounds.min() >= 1  # they ran, and stopped
    time.sleep(0.2)
    np.testing.assert_array_equal(out.copy_to_host(), rounds)
