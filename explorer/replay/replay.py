"""replay(run, packet, partner): a replay run read with the packet rules as one Replay.

Order of work (docs/replay.md): input.json (a refusal there ends the run); the source packet and its cached analysis;
the binding, staged files and geometry; each arm on its own; then the numbers, the matrix and analysis.json.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping
from types import MappingProxyType
from typing import Any

import numpy as np

from explorer.analysis.analyze import analyze
from explorer.analysis.ranking import selection_key
from explorer.analysis.result import Analysis
from explorer.foundations.bounded import quoted, shown_list
from explorer.packet.dtypes import bits_from_buffer, promote
from explorer.packet.files import FileOutcome, FileRequest, PacketRoot, open_directory, verify_files
from explorer.packet.model import INCONCLUSIVE, REFUSED, TENSOR_NAMES, Problem, Reason
from explorer.packet.schema import pointer
from explorer.replay.agreement import element_bounds, tool_check, tool_notes
from explorer.replay.checks import (
    STAGED_SUFFIX,
    ResultFile,
    check_input,
    check_result,
    geometry_mismatches,
    packet_mismatches,
)
from explorer.replay.compute import arm_emulations, arm_references, matrix, output_difference, readback
from explorer.replay.discovery import discover
from explorer.replay.model import (
    ABSENT,
    ADMITTED,
    ANALYZED,
    ARM_ABSENT,
    ARM_FAILED,
    ARM_REFUSED,
    ARM_REFUSED_REASON,
    ARMS,
    CAPTURE,
    EXPECTED_DISPATCH,
    FAILED,
    INPUT_INVALID,
    NOT_REPRODUCING,
    OUTPUT_NONFINITE,
    PACKET_INCONCLUSIVE,
    PACKET_MISMATCH,
    PACKET_MISSING,
    PARTNER,
    PARTNER_INCONCLUSIVE,
    PARTNER_REFUSED,
    PARTNER_SELECTION_DIFFERS,
    PARTNER_SHAPE_DIFFERS,
    READBACK_DIFFERS,
    READBACK_TENSORS,
    RESULT_INVALID,
    AmbiguousPacketError,
    ArmResult,
    Receipt,
    Replay,
)
from explorer.replay.run import (
    INPUT_JSON,
    JsonDocument,
    Launch,
    arm_file,
    arm_present,
    launches,
    read_analysis,
    read_execution,
    read_json,
    result_path,
    tool_metrics,
)

Source = str | os.PathLike | Analysis


def _refused(
    path: str,
    problems: Iterable[Problem],
    document: JsonDocument | None = None,
    packet: Analysis | None = None,
    value: Mapping[str, Any] | None = None,
) -> Replay:
    arms = {arm: ArmResult(arm, None, (), False, Receipt()) for arm in ARMS}
    return Replay(
        path=path,
        status=REFUSED,
        refusals=tuple(problems),
        reasons=(),
        input_sha256=None if document is None else document.sha256,
        packet_sha256=None if value is None else value["packetSHA256"],
        geometry=None if value is None else MappingProxyType(dict(value["geometry"])),
        packet=packet,
        partner=None,
        arms=MappingProxyType(arms),
        matrix=None,
        notes=(),
    )


def _unread(code: str, what: str, problem: Problem) -> Problem:
    """`code` for a file or directory that could not be read: what it is, then the reading's own problem."""
    return Problem(code, None, f"{what}: {problem.message} ({problem.code})")


def _analysis(source: Source, emulate: str | Iterable[str] | None = None) -> Analysis:
    if isinstance(source, Analysis):
        return source if emulate is None else analyze(source.admission.path, emulate=emulate)
    return analyze(source, emulate=emulate)


def _source(path: str, given: Source | None, packet_sha256: str) -> Source | None:
    """The packet given, or the one packet found beside the run; AmbiguousPacketError for two or more."""
    if given is not None:
        return given
    found = discover(path, packet_sha256)
    if len(found) > 1:
        raise AmbiguousPacketError(
            f"{len(found)} packets beside the run hash to its packetSHA256: {shown_list(found)}; name one with --packet"
        )
    return found[0] if found else None


def _staged(root: PacketRoot, document: JsonDocument, source: Analysis) -> list[Problem]:
    """replay_packet_mismatch for each staged file that is not the packet's tensor of that name, byte for byte."""
    tensors = source.admission.tensors
    requests = [
        FileRequest(pointer("tensors", name), name + STAGED_SUFFIX, tensors[name].byte_count, tensors[name].sha256)
        for name in TENSOR_NAMES
    ]
    outcomes = verify_files(root, document.identity, requests)
    return [
        Problem(PACKET_MISMATCH, problem.field, f"staged {problem.message} ({problem.code})")
        for outcome in outcomes.values()
        for problem in outcome.problems
    ]


# ---------------------------------------------------------------- arms


def _result(
    root: PacketRoot, arm: str, input_sha256: str, geometry: Mapping[str, Any], source: Analysis
) -> tuple[list[Problem], ResultFile | None, dict | None]:
    document = read_json(root, result_path(arm))
    if document.problem is not None:
        return [_unread(RESULT_INVALID, result_path(arm), document.problem)], None, None
    if not isinstance(document.value, dict):
        return [Problem(RESULT_INVALID, None, f"{result_path(arm)} is not an object")], None, None
    checked = check_result(arm, document.value, input_sha256, geometry, source.admission)
    return list(checked.problems), checked, document.value


def _receipt(value: Mapping[str, Any] | None, launch: Launch | None) -> Receipt:
    value = value or {}
    table = value.get("pageTable")
    return Receipt(
        dispatch=value.get("dispatch"),
        kernel_output_dtype=value.get("kernelOutputDType"),
        partition_tokens=value.get("partitionTokens"),
        segment_count=value.get("segmentCount"),
        pages=len(table) if isinstance(table, list) else None,
        exit_code=None if launch is None else launch.exit_code,
        seconds=None if launch is None else launch.seconds,
    )


def _requests(arm: str, checked: ResultFile) -> list[FileRequest]:
    return [
        FileRequest(f"/{arm}{pointer('tensors', name)}", arm_file(arm, d.file), d.byte_count, d.sha256)
        for name, d in checked.tensors.items()
    ]


def _file_problems(arm: str, outcomes: Mapping[str, FileOutcome]) -> list[Problem]:
    prefix = f"/{arm}"
    return [
        Problem(problem.code, problem.field[len(prefix) :] if problem.field else None, problem.message)
        for key, outcome in outcomes.items()
        if key.startswith(prefix + "/")
        for problem in outcome.problems
    ]


def _tensor_bits(outcomes: Mapping[str, FileOutcome], arm: str, name: str, descriptors: Mapping) -> np.ndarray:
    """The native bit patterns of the arm's tensor file `name`."""
    descriptor = descriptors[name]
    return bits_from_buffer(outcomes[f"/{arm}/tensors/{name}"].data, descriptor.dtype, descriptor.shape)


class _Arm:
    """What was read of one arm before its numbers: state, problems, receipt, result and file outcomes."""

    def __init__(
        self, arm: str, state: str, problems: list[Problem], receipt: Receipt, checked: ResultFile | None
    ) -> None:
        self.arm, self.state, self.problems, self.receipt, self.checked = arm, state, problems, receipt, checked


def _read_arms(
    root: PacketRoot, document: JsonDocument, geometry: Mapping[str, Any], source: Analysis
) -> tuple[list[_Arm], dict[str, FileOutcome], tuple[str, ...]]:
    launched, notes = launches(read_execution(root))
    arms, requests = [], {}
    for arm in ARMS:
        launch = launched.get(arm)
        if not arm_present(root, arm) and (launch is None or launch.failed):  # no result.json to read
            arms.append(_Arm(arm, ABSENT if launch is None else FAILED, [], _receipt(None, launch), None))
            continue
        problems, checked, value = _result(root, arm, document.sha256, geometry, source)
        if checked is not None:
            requests[arm] = _requests(arm, checked)
        state = FAILED if launch is not None and launch.failed else ARM_REFUSED if problems else ADMITTED
        arms.append(_Arm(arm, state, problems, _receipt(value, launch), checked))
    # One descriptor set at a time: an alias within an arm is refused, two arms' byte-identical files
    # hard-linked to each other (what a dedup tool leaves) are each verified (docs/replay.md).
    outcomes = {
        key: outcome
        for arm_requests in requests.values()
        for key, outcome in verify_files(root, document.identity, arm_requests).items()
    }
    for read in arms:
        read.problems += _file_problems(read.arm, outcomes)
        if read.state == ADMITTED and read.problems:
            read.state = ARM_REFUSED
    return arms, outcomes, notes


def _arm_result(
    read: _Arm,
    outcomes: Mapping[str, FileOutcome],
    source: Analysis,
    partner: Analysis | None,
    tools: Mapping[str, Any] | None,
) -> ArmResult:
    arm = read.arm
    own = EXPECTED_DISPATCH[arm] == source.admission.selection["dispatch"]
    if read.checked is None or read.problems:
        return ArmResult(arm, read.state, tuple(read.problems), own, read.receipt)
    descriptors = read.checked.tensors
    dtype = descriptors["output"].dtype
    bits = _tensor_bits(outcomes, arm, "output", descriptors)[0, :, 0, :]
    values = promote(bits, dtype)
    values.flags.writeable = False
    packet_tensors = source.admission.tensors
    backs = None
    if len(descriptors) > 1:
        backs = MappingProxyType(
            {
                name: readback(
                    name,
                    _tensor_bits(outcomes, arm, name, descriptors)[0],
                    packet_tensors[name].bits[0],
                    outcomes[f"/{arm}/tensors/{name}"].sha256 == packet_tensors[name].sha256,
                )
                for name in READBACK_TENSORS
            }
        )
    numerics = source.numerics
    references = None if numerics is None else arm_references(arm, values, bits, dtype, numerics)
    partner_output = None if partner is None else partner.admission.tensors["output"].values[0, :, 0, :]
    tool = None
    if tools is not None and arm in tools:
        bounds = None if references is None else element_bounds(references, numerics, dtype)
        tool = tool_check(tools[arm], references, bounds)
    return ArmResult(
        arm=arm,
        state=read.state,
        problems=tuple(read.problems),
        own_dispatch=own,
        receipt=read.receipt,
        output_dtype=dtype,
        output_values=values,
        output_bits=bits,
        capture=output_difference(values, packet_tensors["output"].values[0, :, 0, :]),
        partner=None if partner_output is None else output_difference(values, partner_output),
        readback=backs,
        references=references,
        emulations=None if numerics is None else arm_emulations(source, values, bits, dtype),
        tool_analysis=tool,
    )


# ---------------------------------------------------------------- reasons


def _listing(code: str, what: str, items: Iterable[str]) -> Reason:
    return Reason(code, f"{what}: " + ", ".join(items))


def _packet_reasons(source: Analysis, partner: Analysis | None) -> list[Reason]:
    reasons = []
    if source.status == INCONCLUSIVE:
        codes = (r.code for r in source.reasons)
        reasons.append(_listing(PACKET_INCONCLUSIVE, "the source packet is inconclusive", codes))
    if partner is None:
        return reasons
    if partner.status == REFUSED:
        refusals = (p.code for p in partner.admission.refusals)
        return [*reasons, _listing(PARTNER_REFUSED, "the partner is refused", refusals)]
    if partner.status == INCONCLUSIVE:
        reasons.append(_listing(PARTNER_INCONCLUSIVE, "the partner is inconclusive", (r.code for r in partner.reasons)))
    mine, theirs = selection_key(source), selection_key(partner)
    if mine is not None and theirs is not None and mine != theirs:
        fields = [name for (name, value), (_, other) in zip(mine, theirs, strict=True) if value != other]
        reasons.append(_listing(PARTNER_SELECTION_DIFFERS, "the partner's selection differs", fields))
    return reasons


def _comparable_partner(source: Analysis, partner: Analysis | None) -> tuple[Analysis | None, list[Reason]]:
    """The partner whose output can be compared element by element (else None, with shape_differs)."""
    if partner is None or partner.admission.tensors is None:
        return None, []
    shape, other = (a.admission.tensors["output"].shape for a in (source, partner))
    if shape != other:
        return None, [
            Reason(PARTNER_SHAPE_DIFFERS, f"the partner's output has shape {list(other)}, the packet's {list(shape)}")
        ]
    return partner, []


def _arm_reasons(arms: Mapping[str, ArmResult]) -> list[Reason]:
    states = {
        ABSENT: (ARM_ABSENT, "the arm {arm} did not run (no directory, no launch)"),
        FAILED: (ARM_FAILED, "the arm {arm} failed (execution.json)"),
        ARM_REFUSED: (ARM_REFUSED_REASON, "the arm {arm} is refused: {codes}"),
    }
    reasons = [
        Reason(states[a.state][0], states[a.state][1].format(arm=name, codes=", ".join(a.codes)))
        for name, a in arms.items()
        if a.state in states
    ]
    for name, a in arms.items():
        if not a.readable:
            continue
        if a.own_dispatch and not a.capture.identical:
            counts = f"{a.capture.mismatched} of {a.capture.compared} elements"
            reasons.append(
                Reason(NOT_REPRODUCING, f"{name} shares the capture's dispatch and differs from it in {counts}")
            )
        differing = [b.tensor for b in (a.readback or {}).values() if not b.identical]
        if differing:
            reasons.append(
                Reason(READBACK_DIFFERS, f"{name} read back {', '.join(differing)} not byte-identical to the packet's")
            )
        if not np.isfinite(a.output_values).all():
            reasons.append(Reason(OUTPUT_NONFINITE, f"{name} returned a NaN or infinity"))
    return reasons


# ---------------------------------------------------------------- the run


def replay(
    run: str | os.PathLike,
    packet: Source | None = None,
    partner: Source | None = None,
    emulate: str | Iterable[str] | None = None,
) -> Replay:
    """The Replay of the run directory `run` against `packet` (default: found by packetSHA256) and `partner`.

    `emulate` as for analyze: the packet's emulations, scored against each arm's output. Raises AmbiguousPacketError
    when two or more packets beside the run match and EmulationIdError for an unknown id, before reading anything else.
    Never raises for the content of the run or of the packets.
    """
    if emulate is not None:
        from explorer.analysis.emulation import expand  # loaded only when emulations are asked for, as in analyze

        expand(emulate)
    path = os.fspath(run)
    with open_directory(path) as (root, problem):
        if root is None:
            return _refused(path, [_unread(INPUT_INVALID, "no run directory", problem)])
        return _replay_open(path, root, packet, partner, emulate)


def _replay_open(
    path: str, root: PacketRoot, packet: Source | None, partner: Source | None, emulate: str | Iterable[str] | None
) -> Replay:
    document = read_json(root, INPUT_JSON)
    if document.problem is not None:
        return _refused(path, [_unread(INPUT_INVALID, INPUT_JSON, document.problem)], document)
    checked = check_input(document.value)
    if checked.value is None:
        return _refused(path, checked.problems, document)
    value = checked.value
    given = _source(path, packet, value["packetSHA256"])
    if given is None:
        beside = quoted(os.path.dirname(os.path.abspath(path)))
        message = f"no packet beside the run ({beside} and its subdirectories) hashes to {value['packetSHA256']}"
        return _refused(path, [Problem(PACKET_MISSING, "/packetSHA256", message)], document, value=value)
    source = _analysis(given, emulate)
    if source.status == REFUSED:
        return _refused(path, source.admission.refusals, document, source, value)
    problems = [
        *packet_mismatches(value, checked.tensors, source.admission),
        *_staged(root, document, source),
        *geometry_mismatches(value["geometry"], source.admission),
    ]
    if problems:
        return _refused(path, problems, document, source, value)
    partner_analysis = None if partner is None else _analysis(partner)
    reasons = _packet_reasons(source, partner_analysis)
    comparable, shape_reasons = _comparable_partner(source, partner_analysis)
    reads, outcomes, notes = _read_arms(root, document, value["geometry"], source)
    tools, tool_file_notes = tool_metrics(read_analysis(root))
    arms = {read.arm: _arm_result(read, outcomes, source, comparable, tools) for read in reads}
    reasons += shape_reasons + _arm_reasons(arms)
    outputs = [(CAPTURE, source.admission.tensors["output"].values[0, :, 0, :])]
    if comparable is not None:
        outputs.append((PARTNER, comparable.admission.tensors["output"].values[0, :, 0, :]))
    outputs += [(name, a.output_values) for name, a in arms.items() if a.readable]
    disagreements = [
        note for name, a in arms.items() if a.tool_analysis is not None for note in tool_notes(name, a.tool_analysis)
    ]
    return Replay(
        path=path,
        status=INCONCLUSIVE if reasons else ANALYZED,
        refusals=(),
        reasons=tuple(reasons),
        input_sha256=document.sha256,
        packet_sha256=value["packetSHA256"],
        geometry=MappingProxyType(dict(value["geometry"])),
        packet=source,
        partner=partner_analysis,
        arms=MappingProxyType(arms),
        matrix=matrix(outputs),
        notes=(*notes, *tool_file_notes, *disagreements),
        emulations_requested=source.emulations_requested,
    )
