"""mpi4py's API on linerate's collectives: a program written for mpi4py runs after changing
its import line alone, to ``from linerate.collective import MPI``.

>>> from linerate.collective import MPI          # instead of: from mpi4py import MPI
>>> comm = MPI.COMM_WORLD
>>> rank, size = comm.Get_rank(), comm.Get_size()

Every rank is one linerate stack on the machine's shared-memory fabric (started by
``mpirun``, ``srun``, ``linerate collective launch`` or alone as a singleton of one rank),
or, when the launcher sets ``LINERATE_LINK``, ``LINERATE_IP`` and ``LINERATE_ROOT_ADDR`` (or
``MASTER_ADDR``), on that interface, joined through rank 0 (ranks on different machines);
the world is joined at the first call that needs it, and finalized at exit.

- Upper-case methods move buffers: a numpy array, ``bytes``/``bytearray``, or
  ``[buf, MPI.DOUBLE]``, ``[buf, count, MPI.DOUBLE]``, and for the v-variants
  ``[buf, counts, displs, MPI.DOUBLE]`` / ``[buf, (counts, displs), MPI.DOUBLE]``. They
  receive into the caller's buffer; a receive buffer on a rank that receives nothing is
  ignored, as MPI does. Lower-case methods move any picklable Python object.
- Collectives of a communicator spanning the world in rank order (``COMM_WORLD``, its
  ``Dup``, a ``Split`` that keeps everyone) run linerate's collective algorithms; those of a
  smaller communicator, the v-variants, and reductions linerate does not compute natively
  (complex ``PROD``/``MAX``/``MIN``, ``MAXLOC``/``MINLOC``, logical operators on floats)
  run over point-to-point messages, reduced by numpy in rank order.
- Point-to-point messages are buffered: ``Send`` returns once the message is queued, so a
  ``Sendrecv`` or a ring of ``Send`` then ``Recv`` never deadlocks. Tags are 0..``TAG_UB``.
- As in MPI, every rank calls a communicator's collectives in the same order.
"""

from __future__ import annotations

import atexit
import os
import pickle
import socket
import sys
import time
from collections import deque
from typing import Any, Callable, Deque, Dict, List, Optional, Sequence, Tuple, Union

import numpy as np
import numpy.typing as npt

from ._linerate import collective as _native

_Array = npt.NDArray[Any]

#: A wildcard source of a receive or probe.
ANY_SOURCE = -1
#: A wildcard tag of a receive or probe.
ANY_TAG = -1
#: The rank of nobody: sends to it and receives from it complete at once and move nothing.
PROC_NULL = -2
#: A colour of ``Split`` that joins no communicator.
UNDEFINED = -32766
#: The success code.
SUCCESS = 0
#: The largest tag.
TAG_UB = (1 << 20) - 1
#: Thread-support levels (a communicator is used from one thread at a time).
THREAD_SINGLE, THREAD_FUNNELED, THREAD_SERIALIZED, THREAD_MULTIPLE = 0, 1, 2, 3
#: Results of ``Comm.Compare``.
IDENT, CONGRUENT, SIMILAR, UNEQUAL = 0, 1, 2, 3

_TAG_BITS = 20
_TAG_MASK = (1 << _TAG_BITS) - 1
_CTX_MASK = 0xFFFFFFFF & ~_TAG_MASK


class Exception(RuntimeError):  # noqa: A001 (mpi4py's name)
    """An MPI error (a bad argument, a message longer than its receive buffer, ...)."""

    def __init__(self, message: str, error_class: int = 1) -> None:
        super().__init__(message)
        self.error_class = error_class

    def Get_error_class(self) -> int:
        """The error class (1: a generic error here)."""
        return self.error_class


class _InPlace:
    """The ``MPI.IN_PLACE`` marker: the receive buffer is also the send buffer."""

    def __repr__(self) -> str:
        return "MPI.IN_PLACE"


#: Send buffer marker: the data is taken from (and the result left in) the receive buffer.
IN_PLACE = _InPlace()


class Datatype:
    """An element type: its name and numpy dtype."""

    def __init__(self, name: str, dtype: Any) -> None:
        self.name = name
        self.dtype: np.dtype[Any] = np.dtype(dtype)

    @property
    def size(self) -> int:
        """Bytes per element."""
        return self.dtype.itemsize

    def Get_size(self) -> int:
        """Bytes per element."""
        return self.dtype.itemsize

    def Get_extent(self) -> Tuple[int, int]:
        """(lower bound, extent) in bytes."""
        return 0, self.dtype.itemsize

    def Get_name(self) -> str:
        """The type's MPI name."""
        return self.name

    def Commit(self) -> "Datatype":
        """Nothing to commit: returns the type."""
        return self

    def Free(self) -> None:
        """Predefined types are not freed."""

    def __repr__(self) -> str:
        return f"MPI.{self.name}"


_LOC = ("val", "loc")
BYTE = Datatype("BYTE", np.uint8)
CHAR = Datatype("CHAR", "S1")
SIGNED_CHAR = Datatype("SIGNED_CHAR", np.int8)
UNSIGNED_CHAR = Datatype("UNSIGNED_CHAR", np.uint8)
SHORT = Datatype("SHORT", np.int16)
UNSIGNED_SHORT = Datatype("UNSIGNED_SHORT", np.uint16)
INT = Datatype("INT", np.int32)
UNSIGNED = Datatype("UNSIGNED", np.uint32)
LONG = Datatype("LONG", np.int64)
UNSIGNED_LONG = Datatype("UNSIGNED_LONG", np.uint64)
LONG_LONG = Datatype("LONG_LONG", np.int64)
UNSIGNED_LONG_LONG = Datatype("UNSIGNED_LONG_LONG", np.uint64)
INT8_T = Datatype("INT8_T", np.int8)
INT16_T = Datatype("INT16_T", np.int16)
INT32_T = Datatype("INT32_T", np.int32)
INT64_T = Datatype("INT64_T", np.int64)
UINT8_T = Datatype("UINT8_T", np.uint8)
UINT16_T = Datatype("UINT16_T", np.uint16)
UINT32_T = Datatype("UINT32_T", np.uint32)
UINT64_T = Datatype("UINT64_T", np.uint64)
FLOAT = Datatype("FLOAT", np.float32)
DOUBLE = Datatype("DOUBLE", np.float64)
BOOL = Datatype("BOOL", np.bool_)
C_BOOL = Datatype("C_BOOL", np.bool_)
COMPLEX = Datatype("COMPLEX", np.complex64)
DOUBLE_COMPLEX = Datatype("DOUBLE_COMPLEX", np.complex128)
C_FLOAT_COMPLEX = Datatype("C_FLOAT_COMPLEX", np.complex64)
C_DOUBLE_COMPLEX = Datatype("C_DOUBLE_COMPLEX", np.complex128)
C_COMPLEX = Datatype("C_COMPLEX", np.complex64)
DOUBLE_INT = Datatype("DOUBLE_INT", [(_LOC[0], np.float64), (_LOC[1], np.int32)])
FLOAT_INT = Datatype("FLOAT_INT", [(_LOC[0], np.float32), (_LOC[1], np.int32)])
LONG_INT = Datatype("LONG_INT", [(_LOC[0], np.int64), (_LOC[1], np.int32)])
INT_INT = Datatype("INT_INT", [(_LOC[0], np.int32), (_LOC[1], np.int32)])
TWOINT = INT_INT
DATATYPE_NULL = Datatype("DATATYPE_NULL", np.uint8)

#: numpy type characters to datatypes, as mpi4py's ``MPI._typedict``.
_typedict: Dict[str, Datatype] = {
    t.dtype.char: t
    for t in (BYTE, SIGNED_CHAR, SHORT, UNSIGNED_SHORT, INT, UNSIGNED, FLOAT, DOUBLE, BOOL, COMPLEX, DOUBLE_COMPLEX)
}
_typedict.update({"l": LONG, "L": UNSIGNED_LONG, "q": LONG_LONG, "Q": UNSIGNED_LONG_LONG, "c": CHAR})


def _of_dtype(dt: "np.dtype[Any]") -> Datatype:
    """The datatype of numpy elements of `dt` (named after the dtype when MPI has no name)."""
    t = _typedict.get(dt.char)
    return t if t is not None and t.dtype == dt else Datatype(str(dt).upper(), dt)


def _loc_pick(a: _Array, b: _Array, first_wins: Callable[[Any, Any], Any]) -> _Array:
    """MAXLOC/MINLOC of two (value, index) structured arrays: the better value, and on a tie
    the smaller index."""
    v, i = a.dtype.names or _LOC
    take_b = first_wins(b[v], a[v]) | ((b[v] == a[v]) & (b[i] < a[i]))
    out = a.copy()
    out[take_b] = b[take_b]
    return out


def _obj_loc(a: Any, b: Any, better: Callable[[Any, Any], bool]) -> Any:
    """MAXLOC/MINLOC of two (value, index) pairs."""
    if better(b[0], a[0]) or (b[0] == a[0] and b[1] < a[1]):
        return b
    return a


class Op:
    """A reduction operator: linerate's native one where it has it, numpy's elementwise
    function on buffers, and a Python function on objects."""

    def __init__(
        self,
        name: str,
        native: Optional[str],
        arrays: Callable[[_Array, _Array], _Array],
        objects: Callable[[Any, Any], Any],
    ) -> None:
        self.name, self.native, self._arrays, self._objects = name, native, arrays, objects

    def __call__(self, x: Any, y: Any) -> Any:
        """``x op y`` on two objects."""
        return self._objects(x, y)

    def Is_commutative(self) -> bool:
        """Every predefined operator is commutative."""
        return True

    def Free(self) -> None:
        """Predefined operators are not freed."""

    def __repr__(self) -> str:
        return f"MPI.{self.name}"


def _typed(f: Callable[[Any, Any], Any]) -> Callable[[_Array, _Array], _Array]:
    """An elementwise numpy function whose result keeps the operands' dtype."""

    def g(a: _Array, b: _Array) -> _Array:
        with np.errstate(over="ignore", invalid="ignore"):
            return np.asarray(f(a, b)).astype(a.dtype, copy=False)

    return g


SUM = Op("SUM", "sum", _typed(np.add), lambda a, b: a + b)
PROD = Op("PROD", "prod", _typed(np.multiply), lambda a, b: a * b)
MAX = Op("MAX", "max", _typed(np.maximum), lambda a, b: b if b > a else a)
MIN = Op("MIN", "min", _typed(np.minimum), lambda a, b: b if b < a else a)
LAND = Op("LAND", "land", _typed(np.logical_and), lambda a, b: a and b)
LOR = Op("LOR", "lor", _typed(np.logical_or), lambda a, b: a or b)
LXOR = Op("LXOR", "lxor", _typed(np.logical_xor), lambda a, b: bool(a) != bool(b))
BAND = Op("BAND", "band", _typed(np.bitwise_and), lambda a, b: a & b)
BOR = Op("BOR", "bor", _typed(np.bitwise_or), lambda a, b: a | b)
BXOR = Op("BXOR", "bxor", _typed(np.bitwise_xor), lambda a, b: a ^ b)
MAXLOC = Op("MAXLOC", None, lambda a, b: _loc_pick(a, b, np.greater), lambda a, b: _obj_loc(a, b, lambda x, y: x > y))
MINLOC = Op("MINLOC", None, lambda a, b: _loc_pick(a, b, np.less), lambda a, b: _obj_loc(a, b, lambda x, y: x < y))
REPLACE = Op("REPLACE", None, lambda a, b: b, lambda a, b: b)
OP_NULL = Op("OP_NULL", None, lambda a, b: a, lambda a, b: a)

# bool arrays travel as bytes of 0/1: numpy's bool arithmetic is logic.
_BOOL_OPS = {"sum": "lor", "prod": "land", "max": "lor", "min": "land", "band": "land", "bor": "lor", "bxor": "lxor"}
_NATIVE_KINDS = "iuf"


class Status:
    """Where a received message came from: source, tag, and its size in bytes."""

    def __init__(self) -> None:
        self.source = ANY_SOURCE
        self.tag = ANY_TAG
        self.error = SUCCESS
        self.count = 0

    def Get_source(self) -> int:
        """The sender's rank in the communicator."""
        return self.source

    def Get_tag(self) -> int:
        """The message's tag."""
        return self.tag

    def Get_error(self) -> int:
        """The error code (SUCCESS)."""
        return self.error

    def Get_count(self, datatype: Datatype = BYTE) -> int:
        """Elements of `datatype` in the message."""
        return self.count // datatype.Get_size()

    def Get_elements(self, datatype: Datatype) -> int:
        """Elements of `datatype` in the message."""
        return self.count // datatype.Get_size()

    def Is_cancelled(self) -> bool:
        """Requests are not cancelled here."""
        return False

    def Set_source(self, source: int) -> None:
        """Sets the source."""
        self.source = source

    def Set_tag(self, tag: int) -> None:
        """Sets the tag."""
        self.tag = tag

    def Set_error(self, error: int) -> None:
        """Sets the error code."""
        self.error = error

    def _fill(self, source: int, tag: int, count: int) -> None:
        self.source, self.tag, self.count = source, tag, count


# ---------------------------------------------------------------------------------------
# The world: one native communicator per process, joined at first use.


class _Node:
    """This process's rank of the world: the native communicator, messages to itself, and
    the next free communicator context."""

    def __init__(self) -> None:
        launched = any(
            v in os.environ for v in ("LINERATE_RANK", "OMPI_COMM_WORLD_RANK", "PMI_RANK", "SLURM_PROCID")
        )
        if not launched:
            # A singleton, as an MPI program started without a launcher.
            os.environ.update(LINERATE_RANK="0", LINERATE_WORLD_SIZE="1")
            os.environ.setdefault("LINERATE_FABRIC", f"lr-single-{os.getpid()}")
        timeout = float(os.environ.get("LINERATE_MPI_TIMEOUT", "60"))
        self.native: Optional[Any] = _native.init(timeout=timeout)
        self.rank: int = self.native.rank
        self.size: int = self.native.size
        self.selfq: Deque[Tuple[int, bytes]] = deque()
        self.next_ctx = 4  # 0, 1: COMM_WORLD; 2, 3: COMM_SELF
        self.finalized = False

    def c(self) -> Any:
        if self.native is None:
            raise Exception("MPI was finalized")
        return self.native

    def send(self, dest: int, tag: int, data: _Array) -> None:
        """Queues `data` (uint8) for world rank `dest`."""
        if dest == self.rank:
            self.selfq.append((tag, data.tobytes()))
        else:
            self.c().send(data, dest, tag)

    def isend(self, dest: int, tag: int, data: _Array) -> Any:
        """Starts sending `data` (uint8) to world rank `dest` straight from its memory: the
        native request (None for a message to itself, queued as a copy at once)."""
        if dest == self.rank:
            self.selfq.append((tag, data.tobytes()))
            return None
        return self.c().isend(data, dest, tag)

    def probe(self, source: Optional[int], tag: int, mask: int, block: bool) -> Optional[Tuple[int, int, int]]:
        """The first matching message not yet received: (world source, tag, bytes)."""
        if source is None or source == self.rank:
            for t, b in self.selfq:
                if t & mask == tag & mask:
                    return self.rank, t, len(b)
            if source == self.rank:
                if block:
                    raise Exception(f"rank {self.rank} waits for a message to itself that was never sent")
                return None
        if self.size == 1:
            if block:
                raise Exception("a receive from another rank in a world of one rank")
            return None
        got: Optional[Tuple[int, int, int]] = self.c().probe(source, tag, mask, block)
        return got

    def recv_into(self, source: int, tag: int, view: _Array) -> None:
        """Receives the message `probe` found (exactly `view.nbytes` bytes) into `view`."""
        if source == self.rank:
            for k, (t, b) in enumerate(self.selfq):
                if t == tag:
                    del self.selfq[k]
                    view[...] = np.frombuffer(b, dtype=np.uint8)
                    return
            raise Exception("internal: the message to self vanished")
        self.c().recv(view, source, tag)

    def finalize(self) -> None:
        if self.native is not None and not self.finalized:
            self.finalized = True
            n, self.native = self.native, None
            n.finalize()


_NODE: Optional[_Node] = None
_FINALIZED = False


def _node() -> _Node:
    global _NODE
    if _NODE is None:
        if _FINALIZED:
            raise Exception("MPI was finalized")
        _NODE = _Node()
    return _NODE


def _at_exit() -> None:
    if _NODE is not None and not _NODE.finalized:
        try:
            _NODE.finalize()
        except BaseException as e:  # noqa: BLE001 - reported, exit goes on
            print(f"linerate MPI: finalize at exit: {e}", file=sys.stderr)


atexit.register(_at_exit)


# ---------------------------------------------------------------------------------------
# Buffers.


def _as_array(data: Any) -> _Array:
    """A numpy view of a buffer object (array, bytes, bytearray, memoryview)."""
    if isinstance(data, np.ndarray):
        return data
    if isinstance(data, (bytes, bytearray, memoryview)):
        return np.frombuffer(data, dtype=np.uint8)
    return np.asarray(data)


def _flat(a: _Array, writable: bool) -> _Array:
    """`a` as a 1-d view (a receive buffer must be contiguous; a send buffer is copied if not)."""
    if not a.flags.c_contiguous:
        if writable:
            raise Exception("a receive buffer must be contiguous")
        a = np.ascontiguousarray(a)
    return a.reshape(-1)


def _typed_view(a: _Array, datatype: Optional[Datatype]) -> _Array:
    """The elements of flat `a` as `datatype` (its bytes reinterpreted if the types differ)."""
    if datatype is None or datatype.dtype == a.dtype:
        return a
    return a.view(np.uint8).view(datatype.dtype)


def _msg(spec: Any, writable: bool = False) -> _Array:
    """A buffer argument as a flat typed numpy view: `buf`, `[buf, type]`,
    `[buf, count, type]`, `[buf, (count, displ), type]`."""
    if isinstance(spec, (list, tuple)):
        items = list(spec)
        datatype = items.pop() if items and isinstance(items[-1], Datatype) else None
        a = _typed_view(_flat(_as_array(items[0]), writable), datatype)
        if len(items) >= 2 and items[1] is not None:
            c = items[1]
            count, displ = (c[0], c[1]) if isinstance(c, (list, tuple)) else (c, 0)
            a = a[displ : displ + count]
        return a
    return _flat(_as_array(spec), writable)


def _vmsg(spec: Any, size: int, writable: bool) -> Tuple[_Array, List[int], List[int]]:
    """A v-variant buffer: (flat typed view, counts, displacements); counts default to equal
    parts, displacements to packed."""
    if isinstance(spec, (list, tuple)):
        items = list(spec)
        datatype = items.pop() if items and isinstance(items[-1], Datatype) else None
        a = _typed_view(_flat(_as_array(items[0]), writable), datatype)
        counts: Any = items[1] if len(items) > 1 else None
        displs: Any = items[2] if len(items) > 2 else None
        if isinstance(counts, tuple) and len(counts) == 2 and displs is None and not isinstance(counts[0], (int, np.integer)):
            counts, displs = counts
    else:
        a, counts, displs = _flat(_as_array(spec), writable), None, None
    if counts is None:
        counts = [a.size // size] * size
    elif isinstance(counts, (int, np.integer)):
        counts = [int(counts)] * size
    counts = [int(c) for c in counts]
    if displs is None:
        displs = [sum(counts[:i]) for i in range(len(counts))]
    elif isinstance(displs, (int, np.integer)):
        displs = [int(displs) + i * counts[0] for i in range(size)]
    displs = [int(d) for d in displs]
    if len(counts) != size or len(displs) != size:
        raise Exception(f"{len(counts)} counts and {len(displs)} displacements for {size} ranks")
    return a, counts, displs


def _u8(a: _Array) -> _Array:
    """The bytes of a contiguous array, as a uint8 view."""
    return a.view(np.uint8) if a.size else np.zeros(0, dtype=np.uint8)


def _dumps(obj: Any) -> _Array:
    return np.frombuffer(pickle.dumps(obj, protocol=pickle.HIGHEST_PROTOCOL), dtype=np.uint8)


def _loads(b: _Array) -> Any:
    return pickle.loads(b.tobytes())


# ---------------------------------------------------------------------------------------
# Requests.


class Request:
    """A non-blocking operation: ``Wait``/``Test`` (buffers), ``wait``/``test`` (objects)."""

    def __init__(
        self,
        step: Optional[Callable[[bool, Status], Tuple[bool, Any]]] = None,
        status: Optional[Status] = None,
        value: Any = None,
    ) -> None:
        self._step = step
        self._status = status or Status()
        self._value = value

    def _progress(self, block: bool) -> bool:
        if self._step is None:
            return True
        done, value = self._step(block, self._status)
        if done:
            self._step, self._value = None, value
        return done

    @staticmethod
    def _copy_status(src: Status, dst: Optional[Status]) -> None:
        if dst is not None:
            dst._fill(src.source, src.tag, src.count)

    def Wait(self, status: Optional[Status] = None) -> bool:
        """Blocks until the operation completes."""
        self._progress(True)
        self._copy_status(self._status, status)
        return True

    def Test(self, status: Optional[Status] = None) -> bool:
        """Whether the operation completed (progressing it once)."""
        done = self._progress(False)
        if done:
            self._copy_status(self._status, status)
        return done

    def wait(self, status: Optional[Status] = None) -> Any:
        """Blocks until the operation completes; returns the object received (None for a send)."""
        self.Wait(status)
        return self._value

    def test(self, status: Optional[Status] = None) -> Tuple[bool, Any]:
        """(True, object received) once complete, (False, None) before."""
        done = self.Test(status)
        return done, (self._value if done else None)

    def Get_status(self, status: Optional[Status] = None) -> bool:
        """Whether the operation completed, without progressing it."""
        done = self._step is None
        if done:
            self._copy_status(self._status, status)
        return done

    def Cancel(self) -> None:
        """Sends complete at once and receives stay posted: nothing to cancel."""

    def Free(self) -> None:
        """Forgets the request."""

    @staticmethod
    def _any(requests: Sequence["Request"], status: Optional[Status]) -> int:
        pending = [k for k, r in enumerate(requests) if r is not None]
        if not pending:
            return UNDEFINED
        deadline = time.monotonic() + float(os.environ.get("LINERATE_MPI_TIMEOUT", "60"))
        while True:
            for k in pending:
                if requests[k].Test(status):
                    return k
            if time.monotonic() > deadline:
                raise Exception("Waitany: no request completed within the timeout")
            time.sleep(0)

    @staticmethod
    def Waitall(requests: Sequence["Request"], statuses: Optional[List[Status]] = None) -> bool:
        """Waits for every request (statuses, if given, are filled in order)."""
        for k, r in enumerate(requests):
            r.Wait(statuses[k] if statuses is not None and k < len(statuses) else None)
        return True

    @staticmethod
    def waitall(requests: Sequence["Request"], statuses: Optional[List[Status]] = None) -> List[Any]:
        """Waits for every request; returns their objects."""
        return [r.wait(statuses[k] if statuses is not None and k < len(statuses) else None) for k, r in enumerate(requests)]

    @staticmethod
    def Waitany(requests: Sequence["Request"], status: Optional[Status] = None) -> int:
        """Waits for one request; returns its index."""
        return Request._any(requests, status)

    @staticmethod
    def waitany(requests: Sequence["Request"], status: Optional[Status] = None) -> Tuple[int, Any]:
        """Waits for one request; returns (index, object)."""
        k = Request._any(requests, status)
        return k, (requests[k]._value if k != UNDEFINED else None)

    @staticmethod
    def Testall(requests: Sequence["Request"], statuses: Optional[List[Status]] = None) -> bool:
        """Whether every request completed (progressing each once)."""
        done = [r.Test() for r in requests]
        if all(done) and statuses is not None:
            for k, r in enumerate(requests):
                if k < len(statuses):
                    Request._copy_status(r._status, statuses[k])
        return all(done)

    @staticmethod
    def testall(requests: Sequence["Request"], statuses: Optional[List[Status]] = None) -> Tuple[bool, Optional[List[Any]]]:
        """(True, objects) once every request completed, else (False, None)."""
        if Request.Testall(requests, statuses):
            return True, [r._value for r in requests]
        return False, None

    @staticmethod
    def Testany(requests: Sequence["Request"], status: Optional[Status] = None) -> Tuple[int, bool]:
        """(index, True) of a completed request, or (UNDEFINED, False)."""
        for k, r in enumerate(requests):
            if r.Test(status):
                return k, True
        return UNDEFINED, False


#: A request that is complete.
REQUEST_NULL = Request()


# ---------------------------------------------------------------------------------------
# Communicators.


class Comm:
    """A communicator: a group of world ranks and a context that keeps its messages apart."""

    def __init__(self, ranks: Optional[List[int]], ctx: int, name: str = "") -> None:
        # None: the whole world, in order (known once the world is joined).
        self._ranks = ranks
        self._ctx = ctx
        self._name = name

    # -- who is who ------------------------------------------------------------------------

    def _group(self) -> List[int]:
        if self._ranks is None:
            self._ranks = list(range(_node().size))
        return self._ranks

    def _world(self, r: int) -> int:
        g = self._group()
        if not 0 <= r < len(g):
            raise Exception(f"rank {r} is not in a communicator of {len(g)}")
        return g[r]

    def _native_ok(self) -> bool:
        """Whether the communicator is the whole world in rank order (native collectives)."""
        return self._group() == list(range(_node().size))

    def Get_rank(self) -> int:
        """This process's rank in the communicator."""
        return self._group().index(_node().rank)

    def Get_size(self) -> int:
        """Number of ranks."""
        return len(self._group())

    @property
    def rank(self) -> int:
        """This process's rank in the communicator."""
        return self.Get_rank()

    @property
    def size(self) -> int:
        """Number of ranks."""
        return self.Get_size()

    def Get_name(self) -> str:
        """The communicator's name."""
        return self._name

    def Set_name(self, name: str) -> None:
        """Names the communicator."""
        self._name = name

    @property
    def name(self) -> str:
        """The communicator's name."""
        return self._name

    def Is_inter(self) -> bool:
        """Intercommunicators are not supported: False."""
        return False

    def Is_intra(self) -> bool:
        """True."""
        return True

    def Compare(self, other: "Comm") -> int:
        """IDENT (the same object), CONGRUENT (the same ranks in order) or UNEQUAL."""
        if other is self:
            return IDENT
        return CONGRUENT if other._group() == self._group() else UNEQUAL

    def Free(self) -> None:
        """Communicators hold no resources of their own."""

    def Abort(self, errorcode: int = 0) -> None:
        """Ends this process at once with `errorcode` (the launcher stops the others)."""
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(errorcode)

    # -- creating communicators -------------------------------------------------------------

    def _new_ctx(self) -> int:
        """A context free on every rank of this communicator (collective)."""
        node = _node()
        ctx = int(max(self.allgather(node.next_ctx)))
        if ctx + 2 > (_CTX_MASK >> _TAG_BITS):
            raise Exception("too many communicators")
        node.next_ctx = ctx + 2
        return ctx

    def Dup(self) -> "Comm":
        """A communicator of the same ranks with its own messages (collective)."""
        return Comm(list(self._group()), self._new_ctx(), self._name)

    Clone = Dup

    def Split(self, color: int = 0, key: int = 0) -> "Comm":
        """Communicators of the ranks of one colour each, ordered by `key` then rank
        (collective); COMM_NULL for colour UNDEFINED."""
        ctx = self._new_ctx()
        rank = self.Get_rank()
        table = self.allgather((color, key, rank))
        if color == UNDEFINED:
            return COMM_NULL
        members = sorted((k, r) for c, k, r in table if c == color)
        colors = sorted({c for c, _, _ in table if c != UNDEFINED})
        # Each colour its own context pair: ctx + 2 * (index of the colour).
        node = _node()
        node.next_ctx = max(node.next_ctx, ctx + 2 * len(colors))
        return Comm([self._world(r) for _, r in members], ctx + 2 * colors.index(color))

    # -- point to point --------------------------------------------------------------------

    def _tag(self, tag: int, collective: bool = False) -> int:
        if not 0 <= tag <= TAG_UB:
            raise Exception(f"tag {tag} is outside 0..{TAG_UB}")
        return ((self._ctx + int(collective)) << _TAG_BITS) | tag

    def _raw_send(self, data: _Array, dest: int, tag: int, collective: bool = False) -> None:
        _node().send(self._world(dest), self._tag(tag, collective), _u8(data))

    def _raw_probe(self, source: int, tag: int, block: bool, collective: bool = False) -> Optional[Tuple[int, int, int]]:
        """(source rank here, native tag, bytes) of the first matching message."""
        src = None if source == ANY_SOURCE else self._world(source)
        if tag == ANY_TAG:
            ntag, mask = (self._ctx + int(collective)) << _TAG_BITS, _CTX_MASK
        else:
            ntag, mask = self._tag(tag, collective), 0xFFFFFFFF
        got = _node().probe(src, ntag, mask, block)
        if got is None:
            return None
        w, t, n = got
        return self._group().index(w), t, n

    def _recv_bytes(self, source: int, tag: int, collective: bool = False) -> _Array:
        """Receives a whole message (of any length) from `source` as a new uint8 array."""
        got = self._raw_probe(source, tag, True, collective)
        assert got is not None
        src, t, n = got
        out = np.empty(n, dtype=np.uint8)
        _node().recv_into(self._world(src), t, out)
        return out

    def _recv_into(self, buf: _Array, source: int, tag: int, status: Optional[Status], block: bool) -> bool:
        """Receives into flat typed `buf`; False if nothing matched yet (`block=False`)."""
        if source == PROC_NULL:
            if status is not None:
                status._fill(PROC_NULL, ANY_TAG, 0)
            return True
        got = self._raw_probe(source, tag, block)
        if got is None:
            return False
        src, t, n = got
        if n > buf.nbytes:
            raise Exception(f"message of {n} bytes from rank {src} is longer than the receive buffer ({buf.nbytes})")
        _node().recv_into(self._world(src), t, _u8(buf)[:n])
        if status is not None:
            status._fill(src, t & _TAG_MASK, n)
        return True

    def Send(self, buf: Any, dest: int, tag: int = 0) -> None:
        """Sends a buffer (returns once it is queued)."""
        if dest != PROC_NULL:
            self._raw_send(_msg(buf), dest, tag)

    Ssend = Bsend = Rsend = Send

    def Isend(self, buf: Any, dest: int, tag: int = 0) -> Request:
        """Non-blocking send straight from the buffer (as MPI says: do not change it until
        Wait or Test reports the send complete)."""
        if dest == PROC_NULL:
            return Request()
        native = _node().isend(self._world(dest), self._tag(tag), _u8(_msg(buf)))
        if native is None:
            return Request()

        def step(block: bool, st: Status) -> Tuple[bool, Any]:
            if block:
                native.wait()
                return True, None
            done, _ = native.test()
            return bool(done), None

        return Request(step)

    Issend = Ibsend = Irsend = Isend

    def Recv(self, buf: Any, source: int = ANY_SOURCE, tag: int = ANY_TAG, status: Optional[Status] = None) -> None:
        """Receives into a buffer (the message may be shorter than the buffer)."""
        self._recv_into(_msg(buf, writable=True), source, tag, status, True)

    def Irecv(self, buf: Any, source: int = ANY_SOURCE, tag: int = ANY_TAG) -> Request:
        """Non-blocking receive into a buffer: it matches at Wait/Test time."""
        view = _msg(buf, writable=True)

        def step(block: bool, st: Status) -> Tuple[bool, Any]:
            return self._recv_into(view, source, tag, st, block), None

        return Request(step)

    def Sendrecv(
        self,
        sendbuf: Any,
        dest: int,
        sendtag: int = 0,
        recvbuf: Any = None,
        source: int = ANY_SOURCE,
        recvtag: int = ANY_TAG,
        status: Optional[Status] = None,
    ) -> None:
        """Sends one buffer and receives another."""
        self.Send(sendbuf, dest, sendtag)
        if recvbuf is not None:
            self.Recv(recvbuf, source, recvtag, status)

    def Sendrecv_replace(
        self,
        buf: Any,
        dest: int,
        sendtag: int = 0,
        source: int = ANY_SOURCE,
        recvtag: int = ANY_TAG,
        status: Optional[Status] = None,
    ) -> None:
        """Sends a buffer, then receives into it."""
        self.Send(_msg(buf).copy(), dest, sendtag)
        self.Recv(buf, source, recvtag, status)

    def Probe(self, source: int = ANY_SOURCE, tag: int = ANY_TAG, status: Optional[Status] = None) -> bool:
        """Waits for a matching message without receiving it; fills `status`."""
        if source == PROC_NULL:
            if status is not None:
                status._fill(PROC_NULL, ANY_TAG, 0)
            return True
        got = self._raw_probe(source, tag, True)
        assert got is not None
        if status is not None:
            status._fill(got[0], got[1] & _TAG_MASK, got[2])
        return True

    def Iprobe(self, source: int = ANY_SOURCE, tag: int = ANY_TAG, status: Optional[Status] = None) -> bool:
        """Whether a matching message waits; fills `status` if so."""
        if source == PROC_NULL:
            return self.Probe(source, tag, status)
        got = self._raw_probe(source, tag, False)
        if got is not None and status is not None:
            status._fill(got[0], got[1] & _TAG_MASK, got[2])
        return got is not None

    probe = Probe
    iprobe = Iprobe

    # -- point to point, objects -----------------------------------------------------------

    def send(self, obj: Any, dest: int, tag: int = 0) -> None:
        """Sends a picklable object."""
        if dest != PROC_NULL:
            self._raw_send(_dumps(obj), dest, tag)

    ssend = bsend = send

    def isend(self, obj: Any, dest: int, tag: int = 0) -> Request:
        """Non-blocking send of an object (complete at once)."""
        self.send(obj, dest, tag)
        return Request()

    issend = ibsend = isend

    def _recv_obj(self, source: int, tag: int, status: Optional[Status], block: bool) -> Tuple[bool, Any]:
        if source == PROC_NULL:
            if status is not None:
                status._fill(PROC_NULL, ANY_TAG, 0)
            return True, None
        got = self._raw_probe(source, tag, block)
        if got is None:
            return False, None
        src, t, n = got
        b = np.empty(n, dtype=np.uint8)
        _node().recv_into(self._world(src), t, b)
        if status is not None:
            status._fill(src, t & _TAG_MASK, n)
        return True, _loads(b)

    def recv(self, buf: Any = None, source: int = ANY_SOURCE, tag: int = ANY_TAG, status: Optional[Status] = None) -> Any:
        """Receives a picklable object (`buf` is ignored)."""
        return self._recv_obj(source, tag, status, True)[1]

    def irecv(self, buf: Any = None, source: int = ANY_SOURCE, tag: int = ANY_TAG) -> Request:
        """Non-blocking receive of an object; ``wait()`` returns it."""
        return Request(lambda block, st: self._recv_obj(source, tag, st, block))

    def sendrecv(
        self,
        sendobj: Any,
        dest: int,
        sendtag: int = 0,
        recvbuf: Any = None,
        source: int = ANY_SOURCE,
        recvtag: int = ANY_TAG,
        status: Optional[Status] = None,
    ) -> Any:
        """Sends an object and receives one."""
        self.send(sendobj, dest, sendtag)
        return self.recv(recvbuf, source, recvtag, status)

    # -- collectives over point to point (any group) ---------------------------------------

    def _fb_gather(self, data: _Array, root: int) -> Optional[List[_Array]]:
        me, n = self.Get_rank(), self.Get_size()
        if me != root:
            self._raw_send(data, root, 0, collective=True)
            return None
        return [_u8(data).copy() if r == me else self._recv_bytes(r, 0, collective=True) for r in range(n)]

    def _fb_scatter(self, parts: Optional[Sequence[_Array]], root: int) -> _Array:
        me, n = self.Get_rank(), self.Get_size()
        if me == root:
            assert parts is not None and len(parts) == n
            for r in range(n):
                if r != me:
                    self._raw_send(parts[r], r, 0, collective=True)
            return _u8(np.ascontiguousarray(parts[me])).copy()
        return self._recv_bytes(root, 0, collective=True)

    def _fb_bcast(self, data: Optional[_Array], root: int) -> _Array:
        n = self.Get_size()
        return self._fb_scatter([data] * n if data is not None else None, root)

    def _fb_alltoall(self, parts: Sequence[_Array]) -> List[_Array]:
        me, n = self.Get_rank(), self.Get_size()
        for r in range(n):
            if r != me:
                self._raw_send(parts[r], r, 0, collective=True)
        return [_u8(np.ascontiguousarray(parts[me])).copy() if r == me else self._recv_bytes(r, 0, collective=True) for r in range(n)]

    def _fb_allgather(self, data: _Array) -> List[_Array]:
        return self._fb_alltoall([data] * self.Get_size())

    # -- collectives, buffers --------------------------------------------------------------

    def Barrier(self) -> None:
        """Returns once every rank entered it."""
        if self._native_ok():
            _node().c().barrier()
        else:
            self._fb_alltoall([np.zeros(0, np.uint8)] * self.Get_size())

    barrier = Barrier

    def Bcast(self, buf: Any, root: int = 0) -> None:
        """Broadcasts the root's buffer into every rank's."""
        a = _msg(buf, writable=self.Get_rank() != root)
        if self._native_ok():
            u = _u8(a)
            _node().c().bcast(u, root=root, out=u)
        else:
            got = self._fb_bcast(_u8(a) if self.Get_rank() == root else None, root)
            if self.Get_rank() != root:
                _u8(a)[...] = got

    def Scatter(self, sendbuf: Any, recvbuf: Any, root: int = 0) -> None:
        """The root's buffer in equal parts, part i to rank i (IN_PLACE at the root keeps its
        part where it is)."""
        me, n = self.Get_rank(), self.Get_size()
        if me == root:
            s = _msg(sendbuf)
            inplace = recvbuf is IN_PLACE or recvbuf is None
            r = None if inplace else _msg(recvbuf, writable=True)
            if self._native_ok():
                _node().c().scatter(_u8(s), root=root, out=None if r is None else _u8(r))
            else:
                k = s.size // n
                mine = self._fb_scatter([s[i * k : (i + 1) * k] for i in range(n)], root)
                if r is not None:
                    _u8(r)[...] = mine
            return
        r = _msg(recvbuf, writable=True)
        if self._native_ok():
            _node().c().scatter(_u8(r), root=root, out=_u8(r))
        else:
            _u8(r)[...] = self._fb_scatter(None, root)

    def Scatterv(self, sendbuf: Any, recvbuf: Any, root: int = 0) -> None:
        """The root's parts of given counts and displacements, part i to rank i."""
        me, n = self.Get_rank(), self.Get_size()
        parts = None
        if me == root:
            s, counts, displs = _vmsg(sendbuf, n, False)
            parts = [s[d : d + c] for c, d in zip(counts, displs)]
        mine = self._fb_scatter(parts, root)
        if not (me == root and (recvbuf is IN_PLACE or recvbuf is None)):
            r = _msg(recvbuf, writable=True)
            _u8(r)[: mine.size] = mine

    def Gather(self, sendbuf: Any, recvbuf: Any, root: int = 0) -> None:
        """Every rank's buffer to the root, in rank order (recvbuf ignored elsewhere)."""
        me, n = self.Get_rank(), self.Get_size()
        if me == root:
            r = _msg(recvbuf, writable=True)
            k = r.size // n
            s = r[me * k : (me + 1) * k].copy() if sendbuf is IN_PLACE else _msg(sendbuf)
        else:
            r, s = None, _msg(sendbuf)
        if self._native_ok():
            _node().c().gather(_u8(s), root=root, out=None if r is None else _u8(r))
            return
        got = self._fb_gather(s, root)
        if got is not None and r is not None:
            _u8(r)[...] = np.concatenate(got)

    def Gatherv(self, sendbuf: Any, recvbuf: Any, root: int = 0) -> None:
        """Every rank's buffer (of any length) to the root at its displacement."""
        me, n = self.Get_rank(), self.Get_size()
        if me == root:
            r, counts, displs = _vmsg(recvbuf, n, True)
            s = r[displs[me] : displs[me] + counts[me]].copy() if sendbuf is IN_PLACE else _msg(sendbuf)
            got = self._fb_gather(s, root)
            assert got is not None
            for c, d, g in zip(counts, displs, got):
                _u8(r[d : d + c])[: g.size] = g
        else:
            self._fb_gather(_msg(sendbuf), root)

    def Allgather(self, sendbuf: Any, recvbuf: Any) -> None:
        """Every rank's buffer to every rank, in rank order."""
        me, n = self.Get_rank(), self.Get_size()
        r = _msg(recvbuf, writable=True)
        k = r.size // n
        s = r[me * k : (me + 1) * k].copy() if sendbuf is IN_PLACE else _msg(sendbuf)
        if self._native_ok():
            _node().c().allgather(_u8(s), out=_u8(r))
        else:
            _u8(r)[...] = np.concatenate(self._fb_allgather(s))

    def Allgatherv(self, sendbuf: Any, recvbuf: Any) -> None:
        """Every rank's buffer (of any length) to every rank at its displacement."""
        me, n = self.Get_rank(), self.Get_size()
        r, counts, displs = _vmsg(recvbuf, n, True)
        s = r[displs[me] : displs[me] + counts[me]].copy() if sendbuf is IN_PLACE else _msg(sendbuf)
        for c, d, g in zip(counts, displs, self._fb_allgather(s)):
            _u8(r[d : d + c])[: g.size] = g

    def Alltoall(self, sendbuf: Any, recvbuf: Any) -> None:
        """Part j of every rank's buffer to rank j, received in rank order."""
        n = self.Get_size()
        r = _msg(recvbuf, writable=True)
        s = r.copy() if sendbuf is IN_PLACE else _msg(sendbuf)
        if self._native_ok():
            _node().c().alltoall(_u8(s), out=_u8(r))
        else:
            k = s.size // n
            _u8(r)[...] = np.concatenate(self._fb_alltoall([s[i * k : (i + 1) * k] for i in range(n)]))

    def Alltoallv(self, sendbuf: Any, recvbuf: Any) -> None:
        """Part j (given counts and displacements) of every rank's buffer to rank j."""
        n = self.Get_size()
        r, rc, rd = _vmsg(recvbuf, n, True)
        s, sc, sd = _vmsg(sendbuf, n, False) if sendbuf is not IN_PLACE else (r.copy(), rc, rd)
        got = self._fb_alltoall([s[d : d + c] for c, d in zip(sc, sd)])
        for c, d, g in zip(rc, rd, got):
            _u8(r[d : d + c])[: g.size] = g

    # -- reductions ------------------------------------------------------------------------

    def _native_red(self, a: _Array, op: Op) -> Optional[Tuple[_Array, str]]:
        """(array as linerate reduces it, its operator), or None when linerate has no such
        reduction (the numpy path then)."""
        if op.native is None or not self._native_ok():
            return None
        k = a.dtype.kind
        if k == "b":
            return a.view(np.uint8), _BOOL_OPS.get(op.native, op.native)
        if k == "c" and op.native == "sum":
            return a.view(a.real.dtype), "sum"
        if k == "f" and op.native in ("band", "bor", "bxor"):
            raise Exception(f"{op.name} is not defined on {a.dtype}")
        if k in _NATIVE_KINDS and a.dtype.itemsize <= 8 and a.dtype.isnative:
            if k == "f" and a.dtype.itemsize < 2:
                return None
            if k == "f" and op.native in ("land", "lor", "lxor"):
                return None
            return a, op.native
        return None

    def _np_reduce(self, parts: Sequence[_Array], dtype: "np.dtype[Any]", op: Op) -> _Array:
        """Reduces every rank's bytes, in rank order, with numpy."""
        xs = [p.view(dtype) for p in parts]
        acc = xs[0].copy()
        if op in (LAND, LOR, LXOR):
            # A logical reduction's result is 0 or 1, also where one rank's value stands alone.
            acc = LOR._arrays(acc, np.zeros_like(acc))
        for x in xs[1:]:
            acc = op._arrays(acc, x)
        return np.asarray(acc, dtype=dtype)

    def Reduce(self, sendbuf: Any, recvbuf: Any, op: Op = SUM, root: int = 0) -> None:
        """The elementwise reduction of every rank's buffer, at the root."""
        me = self.Get_rank()
        r = _msg(recvbuf, writable=True) if me == root else None
        s = r.copy() if sendbuf is IN_PLACE and r is not None else _msg(sendbuf)
        nat = self._native_red(s, op)
        if nat is not None:
            out = None if r is None else r.view(nat[0].dtype)
            _node().c().reduce(nat[0], op=nat[1], root=root, out=out)
            return
        got = self._fb_gather(_u8(s), root)
        if got is not None and r is not None:
            r[...] = self._np_reduce(got, s.dtype, op)

    def Allreduce(self, sendbuf: Any, recvbuf: Any, op: Op = SUM) -> None:
        """The elementwise reduction of every rank's buffer, at every rank."""
        r = _msg(recvbuf, writable=True)
        s = r if sendbuf is IN_PLACE else _msg(sendbuf)
        nat = self._native_red(s, op)
        if nat is not None:
            _node().c().allreduce(nat[0], op=nat[1], out=r.view(nat[0].dtype))
            return
        r[...] = self._np_reduce(self._fb_allgather(_u8(s)), s.dtype, op)

    def Reduce_scatter_block(self, sendbuf: Any, recvbuf: Any, op: Op = SUM) -> None:
        """The reduction of every rank's buffer in equal parts, part i at rank i."""
        me, n = self.Get_rank(), self.Get_size()
        r = _msg(recvbuf, writable=True)
        s = _msg(sendbuf) if sendbuf is not IN_PLACE else r.copy()
        nat = self._native_red(s, op)
        if nat is not None and s.size == r.size * n:
            _node().c().reduce_scatter(nat[0], op=nat[1], out=r.view(nat[0].dtype))
            return
        full = np.empty_like(s)
        self.Allreduce(s, full, op)
        k = full.size // n
        r[...] = full[me * k : (me + 1) * k]

    def Reduce_scatter(self, sendbuf: Any, recvbuf: Any, recvcounts: Optional[Sequence[int]] = None, op: Op = SUM) -> None:
        """The reduction of every rank's buffer, `recvcounts[i]` elements to rank i."""
        me, n = self.Get_rank(), self.Get_size()
        r = _msg(recvbuf, writable=True)
        counts = list(recvcounts) if recvcounts is not None else [r.size] * n
        if len(set(counts)) == 1 and sendbuf is not IN_PLACE:
            self.Reduce_scatter_block(sendbuf, [r[: counts[0]], _of_dtype(r.dtype)], op)
            return
        s = _msg(sendbuf) if sendbuf is not IN_PLACE else r.copy()
        full = np.empty_like(s)
        self.Allreduce(s, full, op)
        start = sum(counts[:me])
        r[: counts[me]] = full[start : start + counts[me]]

    # -- collectives, objects --------------------------------------------------------------

    def bcast(self, obj: Any, root: int = 0) -> Any:
        """The root's object, at every rank."""
        data = _dumps(obj) if self.Get_rank() == root else None
        return _loads(self._fb_bcast(data, root))

    def scatter(self, sendobj: Optional[Sequence[Any]], root: int = 0) -> Any:
        """Item i of the root's sequence, at rank i."""
        parts = None
        if self.Get_rank() == root:
            if sendobj is None or len(sendobj) != self.Get_size():
                raise Exception(f"scatter: the root passes {self.Get_size()} items")
            parts = [_dumps(o) for o in sendobj]
        return _loads(self._fb_scatter(parts, root))

    def gather(self, sendobj: Any, root: int = 0) -> Optional[List[Any]]:
        """Every rank's object, in a list at the root (None elsewhere)."""
        got = self._fb_gather(_dumps(sendobj), root)
        return None if got is None else [_loads(g) for g in got]

    def allgather(self, sendobj: Any) -> List[Any]:
        """Every rank's object, in a list at every rank."""
        return [_loads(g) for g in self._fb_allgather(_dumps(sendobj))]

    def alltoall(self, sendobj: Sequence[Any]) -> List[Any]:
        """Item j of every rank's sequence to rank j."""
        if len(sendobj) != self.Get_size():
            raise Exception(f"alltoall: pass {self.Get_size()} items")
        return [_loads(g) for g in self._fb_alltoall([_dumps(o) for o in sendobj])]

    def reduce(self, sendobj: Any, op: Op = SUM, root: int = 0) -> Any:
        """Every rank's object reduced in rank order with `op`, at the root (None elsewhere)."""
        got = self.gather(sendobj, root)
        if got is None:
            return None
        acc = got[0]
        for x in got[1:]:
            acc = op(acc, x)
        return acc

    def allreduce(self, sendobj: Any, op: Op = SUM) -> Any:
        """Every rank's object reduced in rank order with `op`, at every rank."""
        got = self.allgather(sendobj)
        acc = got[0]
        for x in got[1:]:
            acc = op(acc, x)
        return acc

    def __repr__(self) -> str:
        return f"<linerate MPI communicator {self._name or self._ctx}>"


Intracomm = Comm

#: Every rank of the job.
COMM_WORLD = Comm(None, 0, "MPI_COMM_WORLD")


class _SelfComm(Comm):
    """This process alone."""

    def _group(self) -> List[int]:
        return [_node().rank]


#: This process alone.
COMM_SELF = _SelfComm([], 2, "MPI_COMM_SELF")


class _NullComm(Comm):
    """No communicator (what Split returns for colour UNDEFINED)."""

    def _group(self) -> List[int]:
        raise Exception("COMM_NULL has no ranks")


#: No communicator.
COMM_NULL = _NullComm([], -1, "MPI_COMM_NULL")


# ---------------------------------------------------------------------------------------
# The environment.

_T0 = time.perf_counter()


def Wtime() -> float:
    """Seconds on a monotonic clock."""
    return time.perf_counter()


def Wtick() -> float:
    """The resolution of ``Wtime``."""
    return time.get_clock_info("perf_counter").resolution


def Init() -> None:
    """Joins the world now (it is otherwise joined at first use)."""
    _node()


def Init_thread(required: int = THREAD_MULTIPLE) -> int:
    """Joins the world; returns the thread level provided (SERIALIZED)."""
    _node()
    return min(required, THREAD_SERIALIZED)


def Query_thread() -> int:
    """The thread level provided: SERIALIZED."""
    return THREAD_SERIALIZED


def Is_initialized() -> bool:
    """Whether the world was joined."""
    return _NODE is not None


def Is_finalized() -> bool:
    """Whether ``Finalize`` ran."""
    return _FINALIZED


def Finalize() -> None:
    """Waits until everything sent is delivered, then leaves the world (also done at exit)."""
    global _FINALIZED
    if _NODE is not None:
        _NODE.finalize()
    _FINALIZED = True


def Get_processor_name() -> str:
    """This machine's host name."""
    return socket.gethostname()


def Get_version() -> Tuple[int, int]:
    """The MPI version whose API this follows."""
    return 3, 1


def Get_library_version() -> str:
    """What library this is."""
    return "linerate collectives (mpi4py-compatible API)"


__all__ = [
    "ANY_SOURCE",
    "ANY_TAG",
    "PROC_NULL",
    "UNDEFINED",
    "SUCCESS",
    "TAG_UB",
    "THREAD_SINGLE",
    "THREAD_FUNNELED",
    "THREAD_SERIALIZED",
    "THREAD_MULTIPLE",
    "IDENT",
    "CONGRUENT",
    "SIMILAR",
    "UNEQUAL",
    "Exception",
    "IN_PLACE",
    "Datatype",
    "BYTE",
    "CHAR",
    "SIGNED_CHAR",
    "UNSIGNED_CHAR",
    "SHORT",
    "UNSIGNED_SHORT",
    "INT",
    "UNSIGNED",
    "LONG",
    "UNSIGNED_LONG",
    "LONG_LONG",
    "UNSIGNED_LONG_LONG",
    "INT8_T",
    "INT16_T",
    "INT32_T",
    "INT64_T",
    "UINT8_T",
    "UINT16_T",
    "UINT32_T",
    "UINT64_T",
    "FLOAT",
    "DOUBLE",
    "BOOL",
    "C_BOOL",
    "COMPLEX",
    "DOUBLE_COMPLEX",
    "C_FLOAT_COMPLEX",
    "C_DOUBLE_COMPLEX",
    "C_COMPLEX",
    "DOUBLE_INT",
    "FLOAT_INT",
    "LONG_INT",
    "INT_INT",
    "TWOINT",
    "DATATYPE_NULL",
    "Op",
    "SUM",
    "PROD",
    "MAX",
    "MIN",
    "LAND",
    "LOR",
    "LXOR",
    "BAND",
    "BOR",
    "BXOR",
    "MAXLOC",
    "MINLOC",
    "REPLACE",
    "OP_NULL",
    "Status",
    "Request",
    "REQUEST_NULL",
    "Comm",
    "Intracomm",
    "COMM_WORLD",
    "COMM_SELF",
    "COMM_NULL",
    "Wtime",
    "Wtick",
    "Init",
    "Init_thread",
    "Query_thread",
    "Is_initialized",
    "Is_finalized",
    "Finalize",
    "Get_processor_name",
    "Get_version",
    "Get_library_version",
]
