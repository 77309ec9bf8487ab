"""Model importers: ONNX models (`ember.frontends.onnx`) and torch.export
programs (`ember.frontends.torch`) to graph IR."""

from collections.abc import Mapping, Sequence


def unsupported_message(
    label: str, kind: str, unsupported: Mapping[str, Sequence[str]]
) -> str:
    """The one message listing what a model uses that a frontend does not convert.

    Args:
        label: names the model ("ONNX model 'resnet'").
        kind: the operators' family ("ONNX", "aten").
        unsupported: each operator, with the attribute or argument values at
            fault where the operator itself converts ("Pad (mode='reflect')"),
            to the names of its nodes.

    Example:
        >>> print(unsupported_message("m", "ONNX", {"Hardmax": ["h1", "h2"]}))
        m: 1 unsupported ONNX operator (op: count (nodes)):
          Hardmax: 2 (h1, h2)
    """
    lines = [
        f"  {key}: {len(nodes)} ({', '.join(nodes)})"
        for key, nodes in sorted(unsupported.items())
    ]
    count = len(unsupported)
    kinds = "operator" if count == 1 else "operators"
    return f"{label}: {count} unsupported {kind} {kinds} (op: count (nodes)):\n" + (
        "\n".join(lines)
    )
