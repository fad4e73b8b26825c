"""Algebraic exploration: equivalent forms of a function, costed with the search's model.

A function's result terms go into an e-graph, where the linear-algebra,
elementwise, fusion, scaling, normal and cast laws of :mod:`prism.algebra.laws`
and the generative ``sharing`` law (two products of one operand become slices
of one fused product) run under a bounded budget. Tensors keep their own
element types (f16 operands of a product accumulated in f32); laws that
change rounding apply to f32 and f64 terms alone. Softmax laws stay out: exact in
the reals, they would let extraction drop the max-subtraction that keeps
``exp`` finite in floating point.

Extraction picks one e-node per e-class. A fused product pays off only when
several results share it, which a tree cost cannot see, so whole programs
are costed (:class:`ProgramCost`): every product with the best schedule the
search finds for its shape (prune and select, as prism-prune and
prism-select do), every other materialized tensor with its traffic at the
target's bandwidth, computing single-use pointwise operands inside their
consumer exactly as :mod:`prism.algebra.to_mlir` writes them. The search starts from
the program as written and takes the best improving move until none is left
(:func:`_descend`): switching one e-class to another e-node, or switching
every e-class that can read one shared e-class to e-nodes that do.

Fused patterns the target runs as one kernel are recognized in the e-graph
(:mod:`prism.algebra.recognize`): each match, the canonical spelling of an
attention, of RMSNorm's row scale or of SwiGLU's gating, is a further start
of the descent whose e-classes stay pinned, and the cost takes the chain
as its kernel (attention's; the row kernel of the scale's statistics; the
GEMM whose epilogue the gating is, where the target's GEMM kernel serves
the product and not its transform path). The ``normal`` laws put every
spelling of a pattern in the classes of its canonical one, and at equal
predicted time the program with more patterns in canonical form wins, so
that every spelling of a function settles on one program. A program whose
best form is itself, written in more loop nests than to_mlir writes it
(SiLU in a generic of its own before the product with the up projection),
is rewritten too, since the cost counted on the fused writing.

Arguments marked invariant (weights: the same on every call) make every
value computed from them alone a *prepared* value: computed once by a
separate function, and free per call. Concatenated or scaled weights cost
a full copy of the weights on every call otherwise, which no fusion repays.
So a function with invariant arguments has two best forms: one that
prepares values (run as ``_prepare`` once, then ``_apply`` per call) and
one that prepares nothing (the function itself, called with every
argument), searched for separately on the same e-graph.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field, replace

from mlir import ir

from prism.algebra import laws as algebra_laws
from prism.algebra import recognize, to_mlir
from prism.algebra.budget import EXPLORATION, Budget
from prism.algebra.egraph import Graph, Node, owned_egraph, read_graph, saturate
from prism.algebra.terms import A, Program, Term, argument_indices, renamed_arguments, subterms, to_egglog
from prism.infra import attrs
from prism.infra.errors import EmptySearchSpace, UnsupportedOp
from prism.infra.ir import ELEMENT_BYTES
from prism.search.model import SearchModel
from prism.search.search import candidates_at, prune, select
from prism.search.space import Contraction

RULESETS = algebra_laws.EXPLORING
BUDGET = EXPLORATION
_MAX_ROUNDS = 32
# E-nodes one variant may try while completing a choice around cycles; the search backtracks, so without a
# bound a cyclic e-graph makes it exponential. A count, not a time, so that the outcome is deterministic.
_BUILD_LIMIT = 20_000
# The most recognized matches that each start a descent of their own (see explore).
_SEPARATE_STARTS = 3
# Predicted times within this relative distance are a tie.
_TIE = 1e-9


@dataclass(frozen=True)
class Variant:
    """One form of a function.

    ``results`` are terms over the function's arguments and, from index
    ``len(arg_shapes)`` on, over the ``prepared`` values; ``prepared`` are
    terms over the invariant arguments only. ``seconds`` is the predicted
    time of one call, prepared values excluded.
    """

    results: tuple[Term, ...]
    prepared: tuple[Term, ...]
    seconds: float
    depth: int = 0  # the longest chain of materialized ops from the arguments to a result
    size: int = 0  # distinct subterms
    recognized: int = 0  # fused patterns in canonical form (prism.algebra.recognize)

    def better_than(self, other: Variant) -> bool:
        """Predicted faster; at equal predicted time, more patterns in canonical form (so that every spelling
        of a function settles on one program), then fewer prepared values (a preparation that saves nothing
        only splits the function, and the parts are optimized apart), then a shorter chain of dependent ops
        (more overlap), then a smaller program."""
        if self.seconds < other.seconds * (1 - _TIE):
            return True
        return self.seconds <= other.seconds * (1 + _TIE) and (
            (-self.recognized, len(self.prepared), self.depth, self.size)
            < (-other.recognized, len(other.prepared), other.depth, other.size))


@dataclass(frozen=True)
class Exploration:
    """What exploring one function found: the program as written, the best variants, and the effort.

    ``best`` may prepare values once (from invariant arguments);
    ``standalone`` is the best variant that prepares nothing, what one call
    of the function itself should run (``best`` when that prepares nothing).
    """

    original: Variant
    best: Variant
    standalone: Variant
    stopped: str
    laws: dict[str, int]
    classes: int
    nodes: int
    evaluated: int
    seconds: float
    invariant: frozenset[int] = frozenset()  # the arguments that are the same on every call
    regrouped: bool = False  # the best variant is the program as written, in fewer loop nests than written

    @property
    def speedup(self) -> float:
        """Predicted time as written over predicted time of the best variant."""
        return self.original.seconds / self.best.seconds if self.best.seconds else 1.0

    @property
    def improves(self) -> bool:
        """Whether the best variant beats the program as written (see :meth:`Variant.better_than`), or is
        the program as written grouped into fewer loop nests (as the cost assumes it runs)."""
        return self.best.results != self.original.results or self.regrouped

    def describe(self, name: str) -> str:
        """One line for a rewritten function: its predicted time per call, and with prepared values."""
        def us(variant: Variant) -> str:
            return f"{variant.seconds * 1e6:.1f} us"

        def times(variant: Variant) -> str:
            return f"{self.original.seconds / variant.seconds:.2f}x" if variant.seconds else "1.00x"

        if self.standalone.results != self.original.results or self.regrouped:
            text = (f"@{name} rewritten: predicted {us(self.original)} -> {us(self.standalone)} per call "
                    f"({times(self.standalone)})")
        else:
            text = f"@{name} kept as written for a plain call (predicted {us(self.original)})"
        if self.best.prepared:
            text += (f"; {len(self.best.prepared)} value(s) prepared once by @{name}_prepare, then "
                     f"{us(self.best)} per call of @{name}_apply ({times(self.best)})")
        return text


_CONTRACTIONS: dict[tuple[Contraction, str], tuple[float, dict[str, int] | None]] = {}


def contraction_seconds(contraction: Contraction, target: SearchModel) -> float:
    """The predicted time of ``contraction``'s best schedule on ``target`` (inf when no schedule fits).

    Pruning and selection are those of prism-prune and prism-select, so a
    variant's products are costed as the search will schedule them. Results
    are kept per contraction and target for the process.
    """
    return _best_schedule(contraction, target)[0]


def fuses_on_tiles(contraction: Contraction, target: SearchModel) -> bool:
    """Whether ``target``'s code generator runs an epilogue (and a dual partner) on the tiles of
    ``contraction`` as the search schedules it: a target that says nothing of it (no ``fuses_on_tiles``)
    always does; the host does where its GEMM kernel serves the product, not at small sizes that it gives to
    its transform path."""
    decides = getattr(target, "fuses_on_tiles", None)
    if decides is None:
        return True
    choice = _best_schedule(contraction, target)[1]
    return choice is not None and decides(contraction, choice)


# Each target's repr, which names its model (a calibration changes it), by the target object: the variants of one
# program ask for their products' schedules tens of thousands of times, and a target's repr takes microseconds.
_TARGET_NAMES: dict[int, tuple[SearchModel, str]] = {}


def _target_name(target: SearchModel) -> str:
    """``repr(target)``, computed once per (immutable) target object."""
    found = _TARGET_NAMES.get(id(target))
    if found is None or found[0] is not target:
        found = _TARGET_NAMES[id(target)] = (target, repr(target))
    return found[1]


def _best_schedule(contraction: Contraction, target: SearchModel) -> tuple[float, dict[str, int] | None]:
    key = (contraction, _target_name(target))
    if key not in _CONTRACTIONS:
        _CONTRACTIONS[key] = _best_schedule_of(contraction, target)
    return _CONTRACTIONS[key]


# Pruned domains, by target and by contraction less its extents: the domain keeps the shapes symbolic (the
# search's parameters), so products of every shape share one pruning.
_DOMAINS: dict[tuple, tuple] = {}


def _best_schedule_of(contraction: Contraction, target: SearchModel) -> tuple[float, dict[str, int] | None]:
    """The predicted seconds of ``contraction``'s best schedule and its knob values (inf, None: none fits)."""
    key = (_target_name(target), replace(contraction, extents=(None,) * len(contraction.extents)))
    if key not in _DOMAINS:
        space = target.space(contraction)
        _DOMAINS[key] = (space, None if space is None else prune(space, contraction, space.universe_set(),
                                                                  on_empty=None)[0])
    space, domain = _DOMAINS[key]
    if space is None:
        return math.inf, None
    try:
        selection = select(space, contraction, candidates_at(space, contraction, domain, 1), target, 1)
    except EmptySearchSpace:
        return math.inf, None
    return float(selection.predicted[0]), space.value_of(selection.best)


def product_contraction(a: tuple[int, ...], b: tuple[int, ...], element: str,
                        accumulator: str | None = None) -> Contraction:
    """The contraction ``matmul`` computes for operands of shapes ``a`` and ``b`` and type ``element``,
    accumulated in ``accumulator`` (``element`` without one); several batch axes cost as one of their product's
    size. Its init is a fill of zero, as to_mlir writes every product's."""
    size, acc = ELEMENT_BYTES[element], ELEMENT_BYTES[accumulator or element]
    if len(a) == 2:
        return Contraction(("m", "n", "k"), ((0, 2), (2, 1)), (a[0], b[1], a[1]), (size, size), acc, element,
                           reads_init=False)
    return Contraction(("batch", "m", "n", "k"), ((0, 1, 3), (0, 3, 2)), (math.prod(a[:-2]), a[-2], b[-1], a[-1]),
                       (size, size), acc, element, reads_init=False)


# The element types of Q, K and V that the host's attention kernel takes (computing in f32).
_ATTENTION_INPUTS = ("f32", "bf16", "f16")


class ProgramCost:
    """The predicted seconds of one call of a program of terms, as :mod:`prism.algebra.to_mlir` would write it.

    Arguments are of type ``element``, or each of its own type in ``arg_elements``;
    every tensor counts its bytes at its own type, and a product is costed at
    the type of the tensors it reads (see to_mlir.product_reads).
    """

    def __init__(self, target: SearchModel, element: str, arg_shapes: list[tuple[int, ...]],
                 arg_elements: list[str] | None = None):
        self.target = target
        self.element = element
        self.arg_elements = list(arg_elements) if arg_elements is not None else [element] * len(arg_shapes)
        self.shapes = to_mlir.Shapes(list(arg_shapes))
        self.elements = to_mlir.Elements(list(self.arg_elements))
        # The models over other arguments, by their shapes and elements: a term's shape and element depend on
        # nothing else, so every variant of one argument layout shares one model and what it has inferred.
        self._others: dict[tuple, ProgramCost] = {}

    def with_args(self, arg_shapes: list[tuple[int, ...]], arg_elements: list[str] | None = None) -> ProgramCost:
        """The same model over other arguments (prepared values appended)."""
        key = (tuple(arg_shapes), None if arg_elements is None else tuple(arg_elements))
        if key not in self._others:
            self._others[key] = ProgramCost(self.target, self.element, arg_shapes, arg_elements)
        return self._others[key]

    def seconds(self, results: Iterable[Term]) -> float:
        """The predicted time of one call computing ``results``."""
        return self.profile(results)[0]

    def profile(self, results: Iterable[Term]) -> tuple[float, int, int, int]:
        """The predicted time of one call, the longest chain of materialized ops it runs, its size, and the
        fused patterns it holds in canonical form."""
        results = list(results)
        uses = to_mlir.use_counts(results)
        fused = to_mlir.fused_terms(results, self.shapes, uses) | to_mlir.absorbed_casts(results, self.elements, uses)
        epilogues = self._epilogues(fused, uses)
        # A dual kernel's first product, mapped to its second (which costs nothing of its own).
        duals = {products[0]: products[1] for products in epilogues.values() if len(products) == 2}
        attentions = {match.root: match for match in self._attentions(results, uses)}
        scales = {match.root: match for match in self._row_scales(results, uses)}
        absorbed = {term for match in [*attentions.values(), *scales.values()] for term in match.inner}
        total = 0.0
        depth: dict[Term, int] = {}

        def chain(term: Term) -> int:  # materialized ops on the longest path into ``term``, itself included
            if term not in depth:
                below = max((chain(arg) for arg in term.args), default=0)
                depth[term] = below + (term not in fused and term not in absorbed
                                       and term.op not in ("arg", "splat", "slice_"))
            return depth[term]

        for term in uses:
            if term in fused or term in absorbed or term in duals.values() or term.op in ("arg", "splat"):
                continue
            if term in attentions:
                total += self.attention_seconds(attentions[term])
                continue
            if term in scales:
                total += self.pass_seconds(self._size(scales[term].x) + self._size(term))
                continue
            total += self._materialized(term, fused, epilogues, term in duals, is_result=term in results)
        gatings = recognize.gating_terms(results, uses, self.shapes) if "epilogue" in self.target.fusion else []
        return (total, max((chain(term) for term in results), default=0), len(uses),
                len(attentions) + len(scales) + len(gatings))

    def _row_scales(self, results: list[Term], uses: dict[Term, int]) -> list[recognize.RowScaleTerms]:
        """The RMSNorm row scales the target runs as one row kernel: the sum of squares in one pass over the
        rows, the scalar ops per row at no cost of their own (see prism.algebra.recognize); f32 rows alone,
        as the kernel takes them."""
        if "rows" not in self.target.fusion:
            return []
        return [match for match in recognize.row_scale_terms(results, uses, self.shapes)
                if self._computes_in_f32(match.x, match.root)]

    def _attentions(self, results: list[Term], uses: dict[Term, int]) -> list[recognize.AttentionTerms]:
        """The attention chains the target runs as one kernel (see prism.algebra.recognize): those computed in
        f32, as the kernel takes them, of f32 Q, K and V or of narrower ones read through casts to f32, P perhaps
        rounded on the way (the kernel widens them: prism.families.attention.host_space)."""
        if "attention" not in self.target.fusion:
            return []
        return [match for match in recognize.attention_terms(results, uses, self.shapes, widened=True)
                if self._computes_in_f32(match.scores, match.root)
                and all((self.elements(t) or self.element) in _ATTENTION_INPUTS for t in (match.q, match.k, match.v))]

    def _computes_in_f32(self, *terms: Term) -> bool:
        return all((self.elements(term) or self.element) == "f32" for term in terms)

    def attention_seconds(self, match: recognize.AttentionTerms) -> float:
        """One attention kernel: both products' flops at the target's peak, and the traffic of Q, K, V and the
        result (the scores are never stored)."""
        q, k, v = (self.shapes(t) for t in (match.q, match.k, match.v))
        moved = sum(self._size(t) for t in (match.q, match.k, match.v, match.root))
        flops = getattr(self.target, "flops", {}).get("f32")  # the kernel computes in f32
        if not flops:
            scores = (*q[:-2], q[-2], k[-2])
            return self.product_seconds(q, (*k[:-2], k[-1], k[-2])) + self.product_seconds(scores, v)
        return 2 * math.prod(q[:-1]) * k[-2] * (q[-1] + v[-1]) / flops + self.pass_seconds(moved)

    def product_seconds(self, a: tuple[int, ...], b: tuple[int, ...], element: str | None = None,
                        accumulator: str | None = None) -> float:
        """The predicted time of a product of operands of shapes ``a`` and ``b`` and type ``element`` (the
        model's without one), accumulated in ``accumulator``, scheduled by the search."""
        return contraction_seconds(product_contraction(a, b, element or self.element, accumulator), self.target)

    def _term_product_seconds(self, term: Term, columns: int = 1) -> float:
        """A product term's time, at the type of the tensors it reads; ``columns`` times as many columns."""
        a, b = to_mlir.product_reads(term, self.elements)
        b_shape = self.shapes(b)
        return self.product_seconds(self.shapes(a), (*b_shape[:-1], columns * b_shape[-1]),
                                    self.elements(a) or self.element, self.elements(term) or self.element)

    def _size(self, term: Term) -> int:
        shape = self.shapes(term)
        return 0 if shape is None else math.prod(shape) * self.elements.bytes(term)

    def pass_seconds(self, moved: int) -> float:
        """One loop nest that moves ``moved`` bytes through memory."""
        return self.target.pass_seconds(moved)

    def _inputs(self, term: Term, fused: set[Term]) -> list[Term]:
        """The tensors a generic computing ``term`` reads: each input of it and of its fused operands, once, in
        the order of its operands."""
        return list(dict.fromkeys(operand for operand, _ in self._reads_as(term, fused, ())))

    def _epilogues(self, fused: set[Term], uses: dict[Term, int]) -> dict[Term, tuple[Term, ...]]:
        """The pointwise terms that the target's GEMM kernels run as their epilogue, each with the products whose
        kernel runs it (see SearchModel.fusion).

        A pointwise term is a product's epilogue when it reads the product
        element for element and is its only reader, and reads its other
        inputs per element, per row (the batch and row loops) or per column
        (the last loop alone): as the host's kernels take them. With "dual",
        a second such product of the same left operand, with a right operand
        of the same shape, joins the first in one kernel.
        """
        if "epilogue" not in self.target.fusion:
            return {}
        found: dict[Term, tuple[Term, ...]] = {}
        for term in uses:
            if (term in fused or term.op not in to_mlir.POINTWISE or self.shapes(term) is None
                    or (self.elements(term) or self.element) != "f32"):  # the kernels store f32 epilogues alone
                continue
            loops = tuple(range(len(self.shapes(term))))
            reads = self._reads_as(term, fused, loops)
            inside = self._occurrences(term, fused)
            products = [operand for operand, along in reads
                        if operand.op == "matmul" and uses[operand] == inside.get(operand) and along == loops
                        and self._f32_operands(operand) and self._fuses_on_tiles(operand)]
            others = [along for operand, along in reads if operand not in products]
            if not products or any(along not in (loops, loops[:-1], loops[-1:]) for along in others):
                continue
            first = products[0]
            second = next((p for p in products[1:] if "dual" in self.target.fusion and p.args[0] == first.args[0]
                           and self.shapes(p.args[1]) == self.shapes(first.args[1])), None)
            found[term] = (first,) if second is None else (first, second)
        return found

    def _fuses_on_tiles(self, product: Term) -> bool:
        """Whether the target runs an epilogue on the tiles of ``product`` (see :func:`fuses_on_tiles`)."""
        a, b = (self.shapes(arg) for arg in product.args)
        return fuses_on_tiles(product_contraction(a, b, self.element), self.target)

    @staticmethod
    def _occurrences(term: Term, fused: set[Term]) -> dict[Term, int]:
        """How often the generic computing ``term`` reads each of its inputs in its body: a product read twice
        by one epilogue (as ``g / (1 + exp(-g))`` reads it) is still read by that epilogue alone."""
        counts: dict[Term, int] = {}
        stack = list(term.args)
        while stack:
            operand = stack.pop()
            if operand in fused:
                stack.extend(operand.args)
            else:
                counts[operand] = counts.get(operand, 0) + 1
        return counts

    def _f32_operands(self, product: Term) -> bool:
        """Whether the GEMM kernels with epilogues take ``product``: one of f32 tensors (they run f32 alone)."""
        return all(self.elements(x) == "f32" for x in to_mlir.product_reads(product, self.elements))

    def _reads_as(self, term: Term, fused: set[Term], loops: tuple[int, ...]) -> list[tuple[Term, tuple[int, ...]]]:
        """The inputs of the generic computing ``term`` (over ``loops``), each with the loops it varies along
        (all but those a fused broadcast adds), in the order of its operands."""
        found: list[tuple[Term, tuple[int, ...]]] = []
        stack = [(operand, loops) for operand in reversed(term.args)]
        while stack:
            operand, along = stack.pop()
            if operand in fused and operand.op == "broadcast":
                stack.append((operand.args[0], along[:operand.attrs[0]] + along[operand.attrs[0] + 1:]))
            elif operand in fused:
                stack.extend((arg, along) for arg in reversed(operand.args))
            elif operand.op != "splat" and (operand, along) not in found:
                found.append((operand, along))
        return found

    def _materialized(self, term: Term, fused: set[Term], epilogues: dict[Term, tuple[Term, ...]], dual: bool,
                      is_result: bool) -> float:
        op = term.op
        if term in epilogues:  # run on the product's tiles: it reads its other inputs, and its kernel stores it
            moved = sum(self._size(i) for i in self._inputs(term, fused) if i not in epilogues[term])
            return self.pass_seconds(moved) - self.pass_seconds(0)  # inside the product's kernel: no launch
        if dual:  # one kernel of both products: as one product of twice the columns
            return self._term_product_seconds(term, columns=2)
        if op == "matmul":
            return self._term_product_seconds(term)
        if op == "slice_":  # a view; only a returned slice is copied out
            return self.pass_seconds(2 * self._size(term)) if is_result else 0.0
        if op in ("transpose", "concat"):
            return self.pass_seconds(sum(self._size(arg) for arg in term.args) + self._size(term))
        return self.pass_seconds(sum(self._size(i) for i in self._inputs(term, fused)) + self._size(term))


@dataclass
class _Search:
    """The e-graph snapshot and everything extraction derives from it."""

    graph: Graph
    roots: list[int]
    arity: int
    invariant: frozenset[int]
    cost: ProgramCost
    prepare_choice: dict[int, Node] = field(init=False)  # how each invariant e-class is prepared
    prepared_classes: frozenset[int] = field(init=False)
    tree_choice: dict[int, Node] = field(init=False)
    evaluated: int = 0
    # One object per distinct term over all variants: the models' maps over terms (shared by the variants of
    # one argument layout) then find a term by identity, not by comparing it whole with an equal copy.
    interned: dict[Term, Term] = field(default_factory=dict)
    completion_lists: dict[int, tuple[Node, ...]] = field(default_factory=dict)  # see _completions
    # Per program (its results, and the shapes and elements of the arguments they read), its profile, or None
    # where no program can be written for it: different choices often complete to the same program.
    profiles: dict[tuple, tuple | None] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.prepare_choice = self._tree_best(self._invariant_node)
        # A broadcast or a cast is never prepared (its consumers read the source through an indexing map or
        # convert it as they read it, for free), though its source may be.
        self.prepared_classes = frozenset(
            cls for cls, node in self.prepare_choice.items()
            if node.op not in ("arg", "splat", "broadcast", "cast") and cls in self.graph.shapes)
        self.tree_choice = self._tree_best(lambda node: node.op != "opaque", free=self.prepared)

    def _invariant_node(self, node: Node) -> bool:
        if node.op == "arg":
            return node.attrs[0] in self.invariant
        return node.op != "opaque"

    def _local_seconds(self, cls: int, node: Node) -> float:
        """A node's own cost, for the completion of partial choices: its product, or its output's traffic."""
        shape = self.graph.shapes.get(cls)
        if node.op in ("arg", "splat", "slice_") or shape is None:
            return 0.0
        if node.op == "matmul":
            a, b = (self.graph.shapes.get(c) for c in node.children)
            if a is None or b is None:
                return math.inf
            element = self.graph.elements.get(node.children[0])
            return self.cost.product_seconds(a, b, element, self.graph.elements.get(cls, element))
        return self.cost.pass_seconds(2 * math.prod(shape) * ELEMENT_BYTES[self.graph.elements.get(cls, "f32")])

    def _tree_best(self, admits: Callable[[Node], bool],
                   free: Callable[[int], bool] = lambda cls: False) -> dict[int, Node]:
        """Per e-class, the admitted e-node of least tree cost (Bellman-Ford over the e-graph); ``free``
        e-classes cost nothing."""
        best: dict[int, tuple[float, Node]] = {}
        changed = True
        while changed:
            changed = False
            for cls in sorted(self.graph.classes):
                for node in self.graph.classes[cls]:
                    if not admits(node) or any(c not in best for c in node.children):
                        continue
                    seconds = 0.0 if free(cls) else (self._local_seconds(cls, node)
                                                     + sum(best[c][0] for c in node.children))
                    if cls not in best or seconds < best[cls][0]:
                        best[cls] = (seconds, node)
                        changed = True
        return {cls: node for cls, (_, node) in best.items()}

    def prepared(self, cls: int) -> bool:
        """Whether ``cls`` is a prepared value: computed from invariant arguments alone, by more than a copy."""
        return cls in self.prepared_classes

    def variant(self, choice: dict[int, Node]) -> Variant | None:
        """The program ``choice`` selects (None when it is cyclic), with its cost.

        E-classes ``choice`` leaves open take their least-cost tree e-node,
        or the next one where that one would make a value depend on itself.
        """
        terms: dict[int, Term] = {}
        placeholders: dict[int, int] = {}
        open_: set[int] = set()
        tried = [0]
        # Bound once: build runs for every e-class of every variant.
        prepared, interned, completions = self.prepared_classes, self.interned, self._completions

        def build(cls: int) -> Term:
            if cls in terms:
                return terms[cls]
            tried[0] += 1
            if tried[0] > _BUILD_LIMIT:
                raise _GaveUp
            if cls in prepared:
                placeholders.setdefault(cls, self.arity + len(placeholders))
                return A.arg(placeholders[cls])
            if cls in open_:
                raise _Cycle
            open_.add(cls)
            try:
                options = (choice[cls],) if cls in choice else completions(cls)
                for index, node in enumerate(options):
                    try:
                        term = Term(node.op, tuple([build(c) for c in node.children]), node.attrs)
                        terms[cls] = interned.setdefault(term, term)
                        break
                    except _Cycle:
                        if index == len(options) - 1:
                            raise
            finally:
                open_.discard(cls)
            return terms[cls]

        try:
            results = tuple(build(root) for root in self.roots)
        except (_Cycle, _GaveUp):
            return None
        read = argument_indices(results)
        used = [cls for cls in placeholders if placeholders[cls] in read]
        renumber = {placeholders[cls]: self.arity + i for i, cls in enumerate(used)}
        if any(old != new for old, new in renumber.items()):
            renamed: dict[Term, Term] = {}
            results = tuple(renamed_arguments(term, renumber, renamed) for term in results)
        prepared = tuple(self._prepare_term(cls) for cls in used)
        shapes = [*self.cost.shapes.arg_shapes, *(self.graph.shapes[c] for c in used)]
        elements = [*self.cost.arg_elements, *(self.graph.elements.get(c, "f32") for c in used)]
        self.evaluated += 1
        key = (results, tuple(map(tuple, shapes)), tuple(elements))
        if key not in self.profiles:
            try:
                self.profiles[key] = self.cost.with_args(shapes, elements).profile(results)
            except UnsupportedOp:  # a choice that no program can be written for (a product of a constant)
                self.profiles[key] = None
        profile = self.profiles[key]
        return None if profile is None else Variant(results, prepared, *profile)

    def _completions(self, cls: int) -> tuple[Node, ...]:
        """The e-nodes that may complete ``cls``: its least-cost tree e-node first, then the others in order."""
        if cls not in self.completion_lists:
            first = self.tree_choice.get(cls)
            rest = [node for node in self.graph.classes[cls] if node != first and node.op != "opaque"]
            self.completion_lists[cls] = tuple(([first] if first else []) + rest)
        return self.completion_lists[cls]

    def _prepare_term(self, cls: int) -> Term:
        node = self.prepare_choice[cls]
        return Term(node.op, tuple(self._prepare_term(c) for c in node.children), node.attrs)

    def reachable(self, choice: dict[int, Node]) -> list[int]:
        """The e-classes the program of ``choice`` computes per call, in a deterministic order."""
        seen: set[int] = set()
        stack = list(reversed(self.roots))
        while stack:
            cls = stack.pop()
            if cls in seen or self.prepared(cls):
                continue
            seen.add(cls)
            stack.extend((choice.get(cls) or self.tree_choice[cls]).children)
        return sorted(seen)


class _GaveUp(Exception):
    """Completing a choice tried more than _BUILD_LIMIT e-nodes."""


class _Cycle(Exception):
    """A choice of e-nodes that makes a value depend on itself."""


def _moves(search: _Search, choice: dict[int, Node],
           pinned: frozenset[int] = frozenset()) -> Iterable[dict[int, Node]]:
    """The neighbours of ``choice``: one e-class switched, or every reader of one shared e-class switched;
    ``pinned`` e-classes (a recognized pattern's) are never switched."""
    reachable = search.reachable(choice)
    current = {cls: choice.get(cls) or search.tree_choice[cls] for cls in reachable}
    reachable = [cls for cls in reachable if cls not in pinned]
    for cls in reachable:
        for node in search.graph.classes[cls]:
            if node != current[cls] and node.op != "opaque":
                yield {**choice, cls: node}
    on = set(reachable)
    for shared in sorted(search.graph.classes):
        readers = {}
        for cls in reachable:
            if shared in current[cls].children:
                continue
            options = [n for n in search.graph.classes[cls] if shared in n.children and n.op != "opaque"]
            if options:
                readers[cls] = options[0]
        if len(readers) >= 2 or (readers and shared in on):
            yield {**choice, **readers}


def _descend(search: _Search, start: dict[int, Node],
             pinned: frozenset[int] = frozenset()) -> tuple[dict[int, Node], Variant | None]:
    """Steepest descent from ``start`` over :func:`_moves` (never switching ``pinned`` e-classes) until no move
    lowers the cost; None for a start that makes a value depend on itself."""
    choice, best = start, search.variant(start)
    if best is None:
        return choice, None
    for _ in range(_MAX_ROUNDS):
        improved = None
        for candidate in _moves(search, choice, pinned):
            found = search.variant(candidate)
            if found is not None and found.better_than(improved[1] if improved else best):
                improved = (candidate, found)
        if improved is None:
            break
        choice, best = improved
    return choice, best


def explore(program: Program, target: SearchModel, element: str, invariant: frozenset[int] = frozenset(),
            budget: Budget = BUDGET, rulesets: tuple[str, ...] = RULESETS) -> Exploration:
    """The cheapest form of ``program`` found within ``budget`` (see the module docstring).

    ``program`` must have static shapes and no opaque terms (the caller
    checks); ``invariant`` holds the indices of the arguments that are the
    same on every call.
    """
    began = time.perf_counter()
    with owned_egraph() as egraph:
        program.register_shapes(egraph)
        memo: dict[Term, object] = {}
        for index, term in enumerate(program.results):
            egraph.let(f"result{index}", to_egglog(term, memo))
        stopped, laws = saturate(egraph, budget, rulesets)
        graph = read_graph(egraph)
    cost = ProgramCost(target, element, [tuple(s) for s in program.arg_shapes],
                       [e or element for e in program.elements()])
    roots = [graph.lets[f"result{i}"] for i in range(len(program.results))]
    written = _as_written(graph, program.results)
    original = Variant(tuple(program.results), (), *cost.profile(program.results))

    pins = _recognized(graph, cost)
    together = _together(pins)
    # Each match is a start of its own while there are few; with many (a whole decoder block), the descents'
    # cost grows with them, and all of them together is the one start.
    separate = pins if len(pins) <= _SEPARATE_STARTS else []
    starts = [(written, frozenset())] + [({**written, **pin}, frozenset(pin)) for pin in separate]
    if together and together not in separate:
        starts.append(({**written, **together}, frozenset(together)))

    def best_from(search: _Search) -> Variant:
        best = original
        for start, pinned in starts:
            _, found = _descend(search, start, pinned)
            if found is not None and found.better_than(best):
                best = found
        return best

    search = _Search(graph, roots, len(program.arg_shapes), invariant, cost)
    best = standalone = best_from(search)
    evaluated = search.evaluated
    if best.prepared:  # a call of the function itself cannot reuse prepared values: search again without them
        plain = _Search(graph, roots, len(program.arg_shapes), frozenset(), cost)
        standalone = best_from(plain)
        evaluated += plain.evaluated
    regrouped = not best.prepared and best.results == original.results and _regroups(program, element)
    return Exploration(original, best, standalone, stopped, laws, len(graph.classes),
                       sum(len(nodes) for nodes in graph.classes.values()), evaluated,
                       time.perf_counter() - began, invariant, regrouped)


def _regroups(program: Program, element: str) -> bool:
    """Whether to_mlir writes ``program``'s results in fewer loop nests than the function is written in.

    The cost of a program of terms is that of to_mlir's writing, where a pointwise op with one use runs inside
    its consumer's loop nest; a function written with that op in a nest of its own (SiLU in its own generic
    before the product with the up projection) loses what the cost counted on, a product's epilogue above all.
    """
    if program.nests is None:
        return False
    shapes = [tuple(s) for s in program.arg_shapes]
    text = to_mlir.function_text(program.name, shapes, list(program.results), element)
    written = sum(1 for line in text.splitlines() if line.lstrip().startswith("%v")
                  and " = linalg." in line and " = linalg.fill" not in line)
    return written < program.nests


def _recognized(graph: Graph, cost: ProgramCost) -> list[dict[int, Node]]:
    """The choices that spell a fused pattern the target runs (prism.algebra.recognize), each a start of the
    descent whose e-classes stay pinned: those of f32 tensors, as the target's fused kernels take them."""
    found = recognize.attention_choices(graph) if "attention" in cost.target.fusion else []
    found += recognize.row_scale_choices(graph) if "rows" in cost.target.fusion else []
    found += recognize.gating_choices(graph) if "epilogue" in cost.target.fusion else []
    # The fused kernels compute in f32 alone: a match of f16 or bf16 tensors is no kernel of theirs.
    return [pin for pin in found if all(graph.elements.get(cls, cost.element) == "f32" for cls in pin)]


def _together(pins: list[dict[int, Node]]) -> dict[int, Node]:
    """The recognized choices that agree with each other, as one: each in turn, unless it spells an e-class
    that an earlier one spells otherwise (another match of the same pattern). One descent starts from them all,
    rather than one per match: a program's patterns are fused together, and the descent's cost grows with the
    number of its starts."""
    merged: dict[int, Node] = {}
    for pin in pins:
        if all(merged.get(cls, node) == node for cls, node in pin.items()):
            merged.update(pin)
    return merged


def _as_written(graph: Graph, results: list[Term]) -> dict[int, Node]:
    """The choice of e-nodes that spells ``results`` as the program writes them (up to terms the laws equate)."""
    choice: dict[int, Node] = {}
    classes: dict[Term, int] = {}

    def visit(term: Term) -> int:
        if term not in classes:
            children = tuple(visit(arg) for arg in term.args)
            cls = graph.find(term.op, children, term.attrs)
            if cls is None:
                raise AssertionError(f"the e-graph lost the term {term.op}")
            # Two written terms may share an e-class (a transpose of a transpose is its operand): the first
            # one visited, the innermost, spells it, and the program as written stays acyclic.
            choice.setdefault(cls, Node(term.op, children, term.attrs))
            classes[term] = cls
        return classes[term]

    for term in results:
        visit(term)
    return choice


# Element types that round every partial sum of a product or a reduction accumulated in them.
NARROW_ACCUMULATORS = ("f16", "bf16")


def explorable(func: ir.Operation, program: Program) -> tuple[str, str, ir.Location]:
    """The widest float element type of ``func``'s tensors, or why the algebra cannot rewrite it, and where.

    Tensors may have several float types (f16 operands of a product
    accumulated in f32): the laws that change rounding apply to f32 and f64
    terms alone (see prism.algebra.laws), so a rewrite of f16 or bf16
    arithmetic only moves data. A sum accumulated in f16 or bf16 (a product
    or a reduction) is refused all the same: it rounds every partial sum, so
    a rewritten program whose sums are split otherwise (a fused product
    scheduled with another K split) differs by more than the proof's
    numeric check bounds.
    """
    function_type = ir.FunctionType(ir.TypeAttr(func.attributes["function_type"]).value)
    types = [*function_type.inputs, *function_type.results]
    if not types:
        return "", "it has no tensor arguments or results", func.location
    if not all(isinstance(t, ir.RankedTensorType) and t.has_static_shape for t in types):
        return "", "its arguments and results must be tensors of static shape", func.location
    elements = {str(ir.RankedTensorType(t).element_type) for t in types}
    if not elements <= set(ELEMENT_BYTES):
        return "", f"its tensors must have float element types, not {', '.join(sorted(elements))}", func.location
    if program.opaque:
        what, where = program.opaque[0]
        return "", f"'{what}' is outside the algebra", where or func.location
    if any(term.op == "splat" for term in program.results):
        return "", "a result is a constant", func.location
    typed = to_mlir.Elements(program.elements())
    narrow = next((term for term in subterms(program.results)
                   if term.op in ("matmul", "reduce_sum") and typed(term) in NARROW_ACCUMULATORS), None)
    if narrow is not None:
        what = "a product" if narrow.op == "matmul" else "a sum"
        return "", (f"{what} accumulates in {typed(narrow)}, whose rounding at every partial sum a rewrite changes "
                    "beyond what the proof bounds (accumulate in f32)"), func.location
    return max(sorted(elements), key=ELEMENT_BYTES.__getitem__), "", func.location


def replace_function(module: ir.Module, func: ir.Operation, name: str, program: Program, found: Exploration,
                     element: str) -> None:
    """Put the best variant of ``func`` (named ``name``) in its place in ``module``.

    When it prepares values, its ``_prepare`` and ``_apply`` parts are added
    (``prism.part_of``), ``func`` becomes the best variant that prepares
    nothing, and ``prism.prepare_args`` and ``prism.apply_args`` on it say how
    the parts compose.
    """
    shapes = [tuple(s) for s in program.arg_shapes]
    element = [e or element for e in program.elements()]
    location = str(func.location)
    texts, parts = [], None
    if found.best.prepared:
        parts = to_mlir.split_functions(name, shapes, found.best.prepared, found.best.results, element, location,
                                        program.views)
        texts += [parts.prepare, parts.apply]
    whole = found.standalone if parts else found.best
    if whole.results != found.original.results or found.regrouped:
        texts.append(to_mlir.function_text(name, shapes, list(whole.results), element, location, program.views))
    function_type = func.attributes["function_type"]
    carried = {key: func.attributes[key] for key in ("arg_attrs", "res_attrs") if key in func.attributes}
    parsed = ir.Module.parse("\n".join(texts), module.context)
    replaced = func
    with ir.InsertionPoint(func), func.location:
        for op in list(parsed.body.operations):
            op = op.operation
            op.move_before(func)
            op_name = ir.StringAttr(op.attributes["sym_name"]).value
            if op_name == name:
                assert str(op.attributes["function_type"]) == str(function_type), "a variant keeps the signature"
                for key, value in carried.items():
                    op.attributes[key] = value
                replaced = op
            else:
                op.attributes[attrs.PART_OF] = ir.StringAttr.get(name)
                if op_name == f"{name}_apply" and parts:
                    _mark_invariant(op, parts.apply_args, found.invariant)
        if parts:
            replaced.attributes[attrs.PREPARE_ARGS] = ir.DenseI64ArrayAttr.get(list(parts.prepare_args))
            replaced.attributes[attrs.APPLY_ARGS] = ir.DenseI64ArrayAttr.get(list(parts.apply_args))
    if replaced is not func:
        func.erase()


def _mark_invariant(apply: ir.Operation, apply_args: tuple[int, ...], invariant: frozenset[int]) -> None:
    """Mark ``{prism.invariant}`` the arguments of @f_apply that are the same on every call (prepared
    values, and @f's invariant arguments passed through), so that the host's code generator may prepare
    them further (pack them once)."""
    entries = [ir.DictAttr.get({attrs.INVARIANT: ir.UnitAttr.get()} if origin < 0 or origin in invariant else {})
               for origin in apply_args]
    apply.attributes["arg_attrs"] = ir.ArrayAttr.get(entries)
