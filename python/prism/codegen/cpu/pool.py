"""The host's thread pool: the runtime that Prism's parallel loops call, written in the LLVM dialect.

``prism-lower-cpu`` turns each outermost ``scf.parallel`` into a function
over a range of its iterations and one call::

    prism_parallel_for(void (*body)(void *ctx, i64 begin, i64 end), void *ctx, i64 n, i64 width)

which runs ``body`` over ``[0, n)`` on at most ``width`` threads (the
caller and ``width - 1`` workers) and returns when every iteration is done.
A program that has a symbol of that name calls it as
``prism_parallel_for_1`` (the first name it leaves free) instead, declared
with ``{prism.pool_entry}``; the JIT links both to the pool.

Why not MLIR's async runtime: its workers sleep on a condition variable
between tasks, and often wake too late to take a share of a short loop
(benchmarks/RESULTS.md, "Host code against every baseline", third pass:
the thread pool). Here a worker spins for ``SPIN_SECONDS`` after each
job, as BLAS libraries' threads do, before it sleeps on a futex; a loop
costs one atomic increment per chunk rather than a task allocation, a
coroutine and a reference-counted token.

Protocol. One job runs at a time. A 64-bit ``counter`` holds the job's epoch
(high 32 bits) and the next unclaimed chunk (low 32 bits); a participant
claims chunk ``i`` of epoch ``e`` with a compare-and-swap from ``(e, i)`` to
``(e, i + 1)``, so a worker that is late for a job can never claim a chunk
of the next one. Before writing a job's fields, the caller closes the
counter under the new epoch, ``(e, 2^32 - 1)``, and opens it, ``(e, 0)``,
only after them: a worker that read the fields between its load of the
counter and its compare-and-swap then fails the swap whenever the fields
may have changed in between (it would otherwise claim a chunk of the last
job with the next job's fields, and ``pending`` would never reach zero).
The fields are written with release and read with acquire, so a worker
that reads a new field also sees the closed counter.
``pending`` counts chunks not yet finished; the caller claims chunks too,
then spins until ``pending`` is zero. A call made while a job runs (another
thread's, or one nested in a chunk) runs its whole range on its own thread,
which is also what every call does in a process without workers (for
instance a child forked after they started).

Chunks: ``n`` iterations are cut into ``min(n, CHUNKS_PER_THREAD * width)``
contiguous chunks, which participants claim in order; results never depend
on which thread ran a chunk.
"""

from __future__ import annotations

import platform

from mlir import ir

from prism.codegen.text import ALIGNMENT

ENTRY = "prism_parallel_for"
# On the declaration of the pool's entry in a lowered module when the program has a symbol named ENTRY, and the
# entry is declared as ENTRY_N instead (the JIT links a declaration of ENTRY, or one so marked, to the pool).
ENTRY_MARK = "prism.pool_entry"


def declaration(name: str = ENTRY) -> str:
    """The declaration of the pool's entry, as ``name`` (marked with ENTRY_MARK if it is not ENTRY), in the LLVM
    dialect."""
    mark = "" if name == ENTRY else f" attributes {{{ENTRY_MARK}}}"
    return f"llvm.func @{name}(!llvm.ptr, !llvm.ptr, i64, i64){mark}"


def is_entry(op: ir.Operation) -> bool:
    """Whether the ``llvm.func`` ``op`` declares the pool's entry (see :func:`declaration`)."""
    if ENTRY_MARK in op.attributes:
        return True
    return (ir.StringAttr(op.attributes["sym_name"]).value == ENTRY and not len(op.regions[0].blocks)
            and str(op.attributes["function_type"]) == _ENTRY_TYPE)


_ENTRY_TYPE = "!llvm.func<void (ptr, ptr, i64, i64)>"


CHUNKS_PER_THREAD = 4
SPIN_SECONDS = 0.004  # a worker's spin after its last job before it sleeps (OpenBLAS spins ~0.1 s)
_SPINS_PER_CLOCK_READ = 256

# Spin-loop hints, and futex(2)'s syscall number, per machine.
_PAUSE = {"x86_64": "pause", "amd64": "pause", "aarch64": "yield", "arm64": "yield"}
_FUTEX = {"x86_64": 202, "amd64": 202, "aarch64": 98, "arm64": 98}
_FUTEX_WAIT_PRIVATE, _FUTEX_WAKE_PRIVATE = 128, 129
_CLOCK_MONOTONIC = 1
# glibc's cpu_set_t: a worker pinned to a CPU beyond it is left where the scheduler puts it.
_CPU_SET_BITS = 1024

# Placing threads on Linux, with sched_setaffinity(2) on the calling thread. @pin(cpu) pins a worker to
# its CPU (none where cpu < 0; a failure, a CPU taken away since, leaves it unpinned). @nudge(cpu) moves a
# caller that runs on another CPU to cpu, the one left to callers, if the caller's own mask allows it: it
# pins the thread there and at once restores its mask, which leaves it where it is.
_PLACE_LINUX = """llvm.func @sched_setaffinity(i32, i64, !llvm.ptr) -> i32
  llvm.func @sched_getaffinity(i32, i64, !llvm.ptr) -> i32
  llvm.func @sched_getcpu() -> i32

  // The word of a CPU mask that holds %cpu's bit, and that bit; %cpu within the mask.
  llvm.func internal @cpu_word(%mask: !llvm.ptr, %cpu: i64) -> !llvm.ptr {{
    %c6 = llvm.mlir.constant(6 : i64) : i64
    %word = llvm.lshr %cpu, %c6 : i64
    %wp = llvm.getelementptr %mask[%word] : (!llvm.ptr, i64) -> !llvm.ptr, i64
    llvm.return %wp : !llvm.ptr
  }}
  llvm.func internal @cpu_bit(%cpu: i64) -> i64 {{
    %c1 = llvm.mlir.constant(1 : i64) : i64
    %c63 = llvm.mlir.constant(63 : i64) : i64
    %shift = llvm.and %cpu, %c63 : i64
    %bit = llvm.shl %c1, %shift : i64
    llvm.return %bit : i64
  }}

  // Whether %cpu is a CPU number that a mask holds.
  llvm.func internal @in_range(%cpu: i64) -> i1 {{
    %c0 = llvm.mlir.constant(0 : i64) : i64
    %bits = llvm.mlir.constant({cpu_bits} : i64) : i64
    %some = llvm.icmp "sge" %cpu, %c0 : i64
    %near = llvm.icmp "slt" %cpu, %bits : i64
    %ok = llvm.and %some, %near : i1
    llvm.return %ok : i1
  }}

  // Set the calling thread's mask to %cpu alone.
  llvm.func internal @only(%cpu: i64) {{
    %c1 = llvm.mlir.constant(1 : i64) : i64
    %mask = llvm.alloca %c1 x !llvm.array<{cpu_words} x i64> : (i64) -> !llvm.ptr
    %empty = llvm.mlir.zero : !llvm.array<{cpu_words} x i64>
    llvm.store %empty, %mask : !llvm.array<{cpu_words} x i64>, !llvm.ptr
    %wp = llvm.call @cpu_word(%mask, %cpu) : (!llvm.ptr, i64) -> !llvm.ptr
    %bit = llvm.call @cpu_bit(%cpu) : (i64) -> i64
    llvm.store %bit, %wp : i64, !llvm.ptr
    %self = llvm.mlir.constant(0 : i32) : i32
    %size = llvm.mlir.constant({cpu_bytes} : i64) : i64
    %r = llvm.call @sched_setaffinity(%self, %size, %mask) : (i32, i64, !llvm.ptr) -> i32
    llvm.return
  }}

  llvm.func internal @pin(%cpu: i64) {{
    %ok = llvm.call @in_range(%cpu) : (i64) -> i1
    llvm.cond_br %ok, ^set, ^done
  ^set:
    llvm.call @only(%cpu) : (i64) -> ()
    llvm.br ^done
  ^done:
    llvm.return
  }}

  llvm.func internal @nudge(%cpu: i64) {{
    %ok = llvm.call @in_range(%cpu) : (i64) -> i1
    llvm.cond_br %ok, ^where, ^done
  ^where:
    %now32 = llvm.call @sched_getcpu() : () -> i32
    %now = llvm.sext %now32 : i32 to i64
    %there = llvm.icmp "eq" %now, %cpu : i64
    llvm.cond_br %there, ^done, ^mask
  ^mask:
    %c1 = llvm.mlir.constant(1 : i64) : i64
    %saved = llvm.alloca %c1 x !llvm.array<{cpu_words} x i64> : (i64) -> !llvm.ptr
    %self = llvm.mlir.constant(0 : i32) : i32
    %size = llvm.mlir.constant({cpu_bytes} : i64) : i64
    %got = llvm.call @sched_getaffinity(%self, %size, %saved) : (i32, i64, !llvm.ptr) -> i32
    %z = llvm.mlir.constant(0 : i32) : i32
    %read = llvm.icmp "eq" %got, %z : i32
    llvm.cond_br %read, ^check, ^done
  ^check:
    %wp = llvm.call @cpu_word(%saved, %cpu) : (!llvm.ptr, i64) -> !llvm.ptr
    %word = llvm.load %wp : !llvm.ptr -> i64
    %bit = llvm.call @cpu_bit(%cpu) : (i64) -> i64
    %has = llvm.and %word, %bit : i64
    %c0 = llvm.mlir.constant(0 : i64) : i64
    %allowed = llvm.icmp "ne" %has, %c0 : i64
    llvm.cond_br %allowed, ^move, ^done
  ^move:
    llvm.call @only(%cpu) : (i64) -> ()
    %back = llvm.call @sched_setaffinity(%self, %size, %saved) : (i32, i64, !llvm.ptr) -> i32
    llvm.br ^done
  ^done:
    llvm.return
  }}""".format(cpu_bits=_CPU_SET_BITS, cpu_words=_CPU_SET_BITS // 64, cpu_bytes=_CPU_SET_BITS // 8)
_PLACE_NOWHERE = """llvm.func internal @pin(%cpu: i64) {
    llvm.return
  }
  llvm.func internal @nudge(%cpu: i64) {
    llvm.return
  }"""


def runtime_text(machine: str | None = None, system: str | None = None) -> str:
    """The pool as an LLVM-dialect module for ``machine`` (``platform.machine()`` by default).

    It defines ``prism_parallel_for`` and ``prism_pool_start(i64 workers, ptr cpus)``.
    On a machine without a known futex number, idle workers poll with
    ``sched_yield`` instead of sleeping; on Linux (``system``,
    ``platform.system()`` by default) each worker pins itself to its CPU.
    """
    machine = (machine or platform.machine()).lower()
    linux = (system or platform.system()) == "Linux"
    pause = _PAUSE.get(machine)
    futex = _FUTEX.get(machine)
    hint = f'llvm.inline_asm has_side_effects "{pause}", "" : () -> ()' if pause else ""
    if futex is None:
        sleep = "%y = llvm.call @sched_yield() : () -> i32"
        wake = ""
    else:
        sleep = (f"%nr = llvm.mlir.constant({futex} : i64) : i64\n"
                 f"    %op = llvm.mlir.constant({_FUTEX_WAIT_PRIVATE} : i64) : i64\n"
                 "    %old = llvm.zext %seen : i32 to i64\n"
                 "    %null = llvm.mlir.zero : !llvm.ptr\n"
                 "    %r = llvm.call @syscall(%nr, %ep, %op, %old, %null) vararg(!llvm.func<i64 (i64, ...)>) "
                 ": (i64, !llvm.ptr, i64, i64, !llvm.ptr) -> i64")
        wake = (f"%nr = llvm.mlir.constant({futex} : i64) : i64\n"
                f"    %op = llvm.mlir.constant({_FUTEX_WAKE_PRIVATE} : i64) : i64\n"
                "    %all = llvm.mlir.constant(2147483647 : i64) : i64\n"
                "    %r = llvm.call @syscall(%nr, %ep, %op, %all) vararg(!llvm.func<i64 (i64, ...)>) "
                ": (i64, !llvm.ptr, i64, i64) -> i64")
    spin_ns = int(SPIN_SECONDS * 1e9)
    place = _PLACE_LINUX if linux else _PLACE_NOWHERE
    return _TEMPLATE.format(shared=_shared_globals(), job_fn=_cache_line_global("job_fn", "!llvm.ptr"), hint=hint,
                            sleep=sleep, wake=wake, place=place, spin_ns=spin_ns, clock=_CLOCK_MONOTONIC,
                            every=_SPINS_PER_CLOCK_READ - 1, chunks=CHUNKS_PER_THREAD)


# The words that threads write (name, type): each a global in a cache line of its own, as is the job's function.
_SHARED_WORDS = (("counter", "i64"), ("pending", "i64"), ("epoch", "i32"), ("sleepers", "i32"), ("busy", "i32"),
                 ("workers", "i64"))


def _cache_line_global(name: str, typ: str, initial: str = "") -> str:
    """An internal global ``@name`` of ``typ``, ALIGNMENT-aligned (a cache line), with ``initial`` as its
    value (none for a global initialized by a region)."""
    return f"llvm.mlir.global internal @{name}({initial}) {{alignment = {ALIGNMENT} : i64}} : {typ}"


def _shared_globals() -> str:
    """The globals that threads write (see _SHARED_WORDS), zero at the start."""
    return "\n".join(f"  {_cache_line_global(name, typ, f'0 : {typ}')}" for name, typ in _SHARED_WORDS)


_TEMPLATE = """
module {{
{shared}
  {job_fn} {{
    %z = llvm.mlir.zero : !llvm.ptr
    llvm.return %z : !llvm.ptr
  }}
  llvm.mlir.global internal @job_ctx() : !llvm.ptr {{
    %z = llvm.mlir.zero : !llvm.ptr
    llvm.return %z : !llvm.ptr
  }}
  llvm.mlir.global internal @job_n(0 : i64) : i64
  llvm.mlir.global internal @job_chunks(0 : i64) : i64
  llvm.mlir.global internal @job_width(0 : i64) : i64

  llvm.func @syscall(i64, ...) -> i64
  llvm.func @sched_yield() -> i32
  llvm.func @clock_gettime(i32, !llvm.ptr) -> i32
  llvm.func @pthread_create(!llvm.ptr, !llvm.ptr, !llvm.ptr, !llvm.ptr) -> i32
  llvm.func @pthread_detach(i64) -> i32
  llvm.mlir.global internal @caller_cpu(-1 : i64) : i64
  {place}

  // Claim and run chunks of the job of epoch %e until none is left.
  llvm.func internal @work(%e: i64) {{
    %cp = llvm.mlir.addressof @counter : !llvm.ptr
    %pp = llvm.mlir.addressof @pending : !llvm.ptr
    %c1 = llvm.mlir.constant(1 : i64) : i64
    %c32 = llvm.mlir.constant(32 : i64) : i64
    %low = llvm.mlir.constant(4294967295 : i64) : i64
    llvm.br ^claim
  ^claim:
    %v = llvm.load %cp atomic seq_cst {{alignment = 8 : i64}} : !llvm.ptr -> i64
    %ve = llvm.lshr %v, %c32 : i64
    %same = llvm.icmp "eq" %ve, %e : i64
    llvm.cond_br %same, ^check, ^done
  ^check:
    %i = llvm.and %v, %low : i64
    %chp = llvm.mlir.addressof @job_chunks : !llvm.ptr
    %chunks = llvm.load %chp atomic acquire {{alignment = 8 : i64}} : !llvm.ptr -> i64
    %left = llvm.icmp "ult" %i, %chunks : i64
    llvm.cond_br %left, ^take, ^done
  ^take:
    %fnp = llvm.mlir.addressof @job_fn : !llvm.ptr
    %fn = llvm.load %fnp atomic acquire {{alignment = 8 : i64}} : !llvm.ptr -> !llvm.ptr
    %ctxp = llvm.mlir.addressof @job_ctx : !llvm.ptr
    %ctx = llvm.load %ctxp atomic acquire {{alignment = 8 : i64}} : !llvm.ptr -> !llvm.ptr
    %np = llvm.mlir.addressof @job_n : !llvm.ptr
    %n = llvm.load %np atomic acquire {{alignment = 8 : i64}} : !llvm.ptr -> i64
    %next = llvm.add %v, %c1 : i64
    %res = llvm.cmpxchg %cp, %v, %next seq_cst seq_cst : !llvm.ptr, i64
    %ok = llvm.extractvalue %res[1] : !llvm.struct<(i64, i1)>
    llvm.cond_br %ok, ^run, ^claim
  ^run:
    // Chunk i covers [i * n / chunks, (i + 1) * n / chunks).
    %lo = llvm.mul %i, %n : i64
    %begin = llvm.udiv %lo, %chunks : i64
    %i1 = llvm.add %i, %c1 : i64
    %hi = llvm.mul %i1, %n : i64
    %end = llvm.udiv %hi, %chunks : i64
    llvm.call %fn(%ctx, %begin, %end) : !llvm.ptr, (!llvm.ptr, i64, i64) -> ()
    %old = llvm.atomicrmw sub %pp, %c1 seq_cst : !llvm.ptr, i64
    llvm.br ^claim
  ^done:
    llvm.return
  }}

  // Nanoseconds on the monotonic clock.
  llvm.func internal @now() -> i64 {{
    %c1 = llvm.mlir.constant(1 : i64) : i64
    %ts = llvm.alloca %c1 x !llvm.struct<(i64, i64)> : (i64) -> !llvm.ptr
    %id = llvm.mlir.constant({clock} : i32) : i32
    %r = llvm.call @clock_gettime(%id, %ts) : (i32, !llvm.ptr) -> i32
    %s = llvm.load %ts : !llvm.ptr -> i64
    %nsp = llvm.getelementptr %ts[0, 1] : (!llvm.ptr) -> !llvm.ptr, !llvm.struct<(i64, i64)>
    %ns = llvm.load %nsp : !llvm.ptr -> i64
    %g = llvm.mlir.constant(1000000000 : i64) : i64
    %sg = llvm.mul %s, %g : i64
    %t = llvm.add %sg, %ns : i64
    llvm.return %t : i64
  }}

  // A worker (%arg: its index, from 1, in the low 32 bits; its CPU plus one, or 0, in the high ones): pin
  // itself to its CPU, then wait for a new epoch, spinning for a while and then sleeping; join the job when
  // the job's width includes this worker.
  llvm.func internal @worker(%arg: !llvm.ptr) -> !llvm.ptr {{
    %word = llvm.ptrtoint %arg : !llvm.ptr to i64
    %half = llvm.mlir.constant(32 : i64) : i64
    %lowbits = llvm.mlir.constant(4294967295 : i64) : i64
    %id = llvm.and %word, %lowbits : i64
    %cpu1 = llvm.lshr %word, %half : i64
    %one = llvm.mlir.constant(1 : i64) : i64
    %cpu = llvm.sub %cpu1, %one : i64
    llvm.call @pin(%cpu) : (i64) -> ()
    %ep = llvm.mlir.addressof @epoch : !llvm.ptr
    %sp = llvm.mlir.addressof @sleepers : !llvm.ptr
    %c0 = llvm.mlir.constant(0 : i64) : i64
    %c1 = llvm.mlir.constant(1 : i64) : i64
    %c1w = llvm.mlir.constant(1 : i32) : i32
    %every = llvm.mlir.constant({every} : i64) : i64
    %budget = llvm.mlir.constant({spin_ns} : i64) : i64
    %first = llvm.load %ep atomic seq_cst {{alignment = 4 : i64}} : !llvm.ptr -> i32
    %t0 = llvm.call @now() : () -> i64
    llvm.br ^wait(%first, %c0, %t0 : i32, i64, i64)
  ^wait(%seen: i32, %spins: i64, %since: i64):
    %e = llvm.load %ep atomic seq_cst {{alignment = 4 : i64}} : !llvm.ptr -> i32
    %new = llvm.icmp "ne" %e, %seen : i32
    llvm.cond_br %new, ^go, ^idle
  ^idle:
    {hint}
    %spins1 = llvm.add %spins, %c1 : i64
    %tick = llvm.and %spins1, %every : i64
    %read = llvm.icmp "eq" %tick, %c0 : i64
    llvm.cond_br %read, ^clock, ^wait(%seen, %spins1, %since : i32, i64, i64)
  ^clock:
    %t = llvm.call @now() : () -> i64
    %dt = llvm.sub %t, %since : i64
    %tired = llvm.icmp "sgt" %dt, %budget : i64
    llvm.cond_br %tired, ^sleep, ^wait(%seen, %spins1, %since : i32, i64, i64)
  ^sleep:
    %s1 = llvm.atomicrmw add %sp, %c1w seq_cst : !llvm.ptr, i32
    {sleep}
    %s2 = llvm.atomicrmw sub %sp, %c1w seq_cst : !llvm.ptr, i32
    llvm.br ^wait(%seen, %c0, %since : i32, i64, i64)
  ^go:
    %wp = llvm.mlir.addressof @job_width : !llvm.ptr
    %width = llvm.load %wp atomic acquire {{alignment = 8 : i64}} : !llvm.ptr -> i64
    %in = llvm.icmp "ult" %id, %width : i64
    llvm.cond_br %in, ^join, ^rest
  ^join:
    %e64 = llvm.zext %e : i32 to i64
    llvm.call @work(%e64) : (i64) -> ()
    llvm.br ^rest
  ^rest:
    %t2 = llvm.call @now() : () -> i64
    llvm.br ^wait(%e, %c0, %t2 : i32, i64, i64)
  }}

  // Start %n workers (once per process): worker i on CPU %cpus[i] (negative: left to the scheduler), and
  // callers moved to %cpus[0] when they share a loop (negative: left where they are); every thread left to
  // the scheduler where %cpus is null.
  llvm.func @prism_pool_start(%n: i64, %cpus: !llvm.ptr) {{
    %c1 = llvm.mlir.constant(1 : i64) : i64
    %c32 = llvm.mlir.constant(32 : i64) : i64
    %c0 = llvm.mlir.constant(0 : i64) : i64
    %wk = llvm.mlir.addressof @workers : !llvm.ptr
    %tid = llvm.alloca %c1 x i64 : (i64) -> !llvm.ptr
    %null = llvm.mlir.zero : !llvm.ptr
    %fn = llvm.mlir.addressof @worker : !llvm.ptr
    %given = llvm.icmp "ne" %cpus, %null : !llvm.ptr
    llvm.cond_br %given, ^callers, ^next(%c1 : i64)
  ^callers:
    %first = llvm.load %cpus : !llvm.ptr -> i64
    %ccp = llvm.mlir.addressof @caller_cpu : !llvm.ptr
    llvm.store %first, %ccp atomic seq_cst {{alignment = 8 : i64}} : i64, !llvm.ptr
    llvm.br ^next(%c1 : i64)
  ^next(%i: i64):
    %more = llvm.icmp "sle" %i, %n : i64
    llvm.cond_br %more, ^spawn, ^done
  ^spawn:
    llvm.cond_br %given, ^read, ^create(%c0 : i64)
  ^read:
    %cp = llvm.getelementptr %cpus[%i] : (!llvm.ptr, i64) -> !llvm.ptr, i64
    %cpu = llvm.load %cp : !llvm.ptr -> i64
    %cpu1 = llvm.add %cpu, %c1 : i64
    %low = llvm.icmp "slt" %cpu1, %c0 : i64
    %kept = llvm.select %low, %c0, %cpu1 : i1, i64
    llvm.br ^create(%kept : i64)
  ^create(%tag: i64):
    %high = llvm.shl %tag, %c32 : i64
    %packed = llvm.or %high, %i : i64
    %arg = llvm.inttoptr %packed : i64 to !llvm.ptr
    %rc = llvm.call @pthread_create(%tid, %null, %fn, %arg) : (!llvm.ptr, !llvm.ptr, !llvm.ptr, !llvm.ptr) -> i32
    %z = llvm.mlir.constant(0 : i32) : i32
    %failed = llvm.icmp "ne" %rc, %z : i32
    llvm.cond_br %failed, ^done, ^started
  ^started:
    %t = llvm.load %tid : !llvm.ptr -> i64
    %d = llvm.call @pthread_detach(%t) : (i64) -> i32
    %old = llvm.atomicrmw add %wk, %c1 seq_cst : !llvm.ptr, i64
    %i1 = llvm.add %i, %c1 : i64
    llvm.br ^next(%i1 : i64)
  ^done:
    llvm.return
  }}

  // The address of prism_parallel_for, for the engines that link against it.
  llvm.func @prism_pool_entry() -> !llvm.ptr {{
    %f = llvm.mlir.addressof @prism_parallel_for : !llvm.ptr
    llvm.return %f : !llvm.ptr
  }}

  llvm.func @prism_parallel_for(%fn: !llvm.ptr, %ctx: !llvm.ptr, %n: i64, %width: i64) {{
    %c0 = llvm.mlir.constant(0 : i64) : i64
    %c1 = llvm.mlir.constant(1 : i64) : i64
    %c32 = llvm.mlir.constant(32 : i64) : i64
    %z = llvm.mlir.constant(0 : i32) : i32
    %one = llvm.mlir.constant(1 : i32) : i32
    %bp = llvm.mlir.addressof @busy : !llvm.ptr
    %wk = llvm.mlir.addressof @workers : !llvm.ptr
    %workers = llvm.load %wk atomic seq_cst {{alignment = 8 : i64}} : !llvm.ptr -> i64
    %has = llvm.icmp "ugt" %workers, %c0 : i64
    %wide = llvm.icmp "ugt" %width, %c1 : i64
    %many = llvm.icmp "ugt" %n, %c1 : i64
    %a = llvm.and %has, %wide : i1
    %share = llvm.and %a, %many : i1
    llvm.cond_br %share, ^lock, ^alone
  ^lock:
    %res = llvm.cmpxchg %bp, %z, %one seq_cst seq_cst : !llvm.ptr, i32
    %ok = llvm.extractvalue %res[1] : !llvm.struct<(i32, i1)>
    llvm.cond_br %ok, ^publish, ^alone
  ^alone:
    llvm.call %fn(%ctx, %c0, %n) : !llvm.ptr, (!llvm.ptr, i64, i64) -> ()
    llvm.return
  ^publish:
    // A caller on a worker's CPU would share it with that worker while the caller's CPU idles.
    %ccp = llvm.mlir.addressof @caller_cpu : !llvm.ptr
    %home = llvm.load %ccp atomic seq_cst {{alignment = 8 : i64}} : !llvm.ptr -> i64
    llvm.call @nudge(%home) : (i64) -> ()
    // The next epoch (never 0 in the counter's high half). The counter is first closed under it, so that
    // a worker still in the last job, holding that job's counter value, can claim nothing while this
    // job's fields are written.
    %ep = llvm.mlir.addressof @epoch : !llvm.ptr
    %prev = llvm.load %ep atomic seq_cst {{alignment = 4 : i64}} : !llvm.ptr -> i32
    %bumped = llvm.add %prev, %one : i32
    %wrapped = llvm.icmp "eq" %bumped, %z : i32
    %e = llvm.select %wrapped, %one, %bumped : i1, i32
    %e64 = llvm.zext %e : i32 to i64
    %start = llvm.shl %e64, %c32 : i64
    %low = llvm.mlir.constant(4294967295 : i64) : i64
    %closed = llvm.or %start, %low : i64
    %cp = llvm.mlir.addressof @counter : !llvm.ptr
    llvm.store %closed, %cp atomic seq_cst {{alignment = 8 : i64}} : i64, !llvm.ptr
    %k = llvm.mlir.constant({chunks} : i64) : i64
    %most = llvm.mul %width, %k : i64
    %fewer = llvm.icmp "ult" %n, %most : i64
    %chunks = llvm.select %fewer, %n, %most : i1, i64
    %fnp = llvm.mlir.addressof @job_fn : !llvm.ptr
    llvm.store %fn, %fnp atomic release {{alignment = 8 : i64}} : !llvm.ptr, !llvm.ptr
    %ctxp = llvm.mlir.addressof @job_ctx : !llvm.ptr
    llvm.store %ctx, %ctxp atomic release {{alignment = 8 : i64}} : !llvm.ptr, !llvm.ptr
    %np = llvm.mlir.addressof @job_n : !llvm.ptr
    llvm.store %n, %np atomic release {{alignment = 8 : i64}} : i64, !llvm.ptr
    %chp = llvm.mlir.addressof @job_chunks : !llvm.ptr
    llvm.store %chunks, %chp atomic release {{alignment = 8 : i64}} : i64, !llvm.ptr
    %wp = llvm.mlir.addressof @job_width : !llvm.ptr
    llvm.store %width, %wp atomic release {{alignment = 8 : i64}} : i64, !llvm.ptr
    %pp = llvm.mlir.addressof @pending : !llvm.ptr
    llvm.store %chunks, %pp atomic seq_cst {{alignment = 8 : i64}} : i64, !llvm.ptr
    llvm.store %start, %cp atomic seq_cst {{alignment = 8 : i64}} : i64, !llvm.ptr
    llvm.store %e, %ep atomic seq_cst {{alignment = 4 : i64}} : i32, !llvm.ptr
    %sp = llvm.mlir.addressof @sleepers : !llvm.ptr
    %asleep = llvm.load %sp atomic seq_cst {{alignment = 4 : i64}} : !llvm.ptr -> i32
    %any = llvm.icmp "ne" %asleep, %z : i32
    llvm.cond_br %any, ^wake, ^work
  ^wake:
    {wake}
    llvm.br ^work
  ^work:
    llvm.call @work(%e64) : (i64) -> ()
    llvm.br ^drain
  ^drain:
    %left = llvm.load %pp atomic seq_cst {{alignment = 8 : i64}} : !llvm.ptr -> i64
    %done = llvm.icmp "eq" %left, %c0 : i64
    llvm.cond_br %done, ^finish, ^spin
  ^spin:
    {hint}
    llvm.br ^drain
  ^finish:
    llvm.store %z, %bp atomic seq_cst {{alignment = 4 : i64}} : i32, !llvm.ptr
    llvm.return
  }}
}}
"""
