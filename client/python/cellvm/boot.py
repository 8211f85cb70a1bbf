"""Boot stamps from the HELLO reply turned into per-stage durations."""


class BootReport:
    """CLOCK_BOOTTIME stamps (ns) by name and the stages between them.

    `stages` lists (from, to, seconds) in time order; `total` is first stamp to
    last. str() gives a small table.
    """

    def __init__(self, stamps):
        self.stamps = {k: int(v) for k, v in (stamps or {}).items() if isinstance(v, int)}
        ordered = sorted(self.stamps.items(), key=lambda kv: kv[1])
        self.stages = [(a, b, (tb - ta) / 1e9) for (a, ta), (b, tb) in zip(ordered, ordered[1:])]
        self.total = (ordered[-1][1] - ordered[0][1]) / 1e9 if ordered else 0.0

    def as_dict(self):
        """{"from->to": seconds} in time order."""
        return {f"{a}->{b}": s for a, b, s in self.stages}

    def __getitem__(self, stage):
        return self.as_dict()[stage]

    def __iter__(self):
        return iter(self.stages)

    def __len__(self):
        return len(self.stages)

    def __repr__(self):
        return f"BootReport({self.as_dict()}, total={self.total:.6f})"

    def __str__(self):
        width = max([len(f"{a} -> {b}") for a, b, _ in self.stages] + [5])
        lines = [f"{a + ' -> ' + b:<{width}}  {s * 1000:10.3f} ms" for a, b, s in self.stages]
        lines.append(f"{'total':<{width}}  {self.total * 1000:10.3f} ms")
        return "\n".join(lines)
