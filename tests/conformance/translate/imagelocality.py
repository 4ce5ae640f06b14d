"""TestImageLocalityPriority of pkg/scheduler/framework/plugins/imagelocality/image_locality_test.go."""

from __future__ import annotations

from k8s import Obj, container, node, pod, write

MB = 1024 * 1024


def spec_pod(images: list[str], init: list[str] | None = None) -> Obj:
    return pod(
        containers=[container(f"c{i}", image) for i, image in enumerate(images)],
        init_containers=[container(f"i{i}", image) for i, image in enumerate(init)] if init else None,
    )


def images(*entries: tuple[list[str], int]) -> list[tuple[list[str], int]]:
    return [(names, size * MB) for names, size in entries]


node403002000 = images(
    (["gcr.io/40:latest", "gcr.io/40:v1", "gcr.io/40:v1"], 40),
    (["gcr.io/300:latest", "gcr.io/300:v1"], 300),
    (["gcr.io/2000:latest"], 2000),
)
node25010 = images((["gcr.io/250:latest"], 250), (["gcr.io/10:latest", "gcr.io/10:v1"], 10))
node60040900 = images((["gcr.io/600:latest"], 600), (["gcr.io/40:latest"], 40), (["gcr.io/900:latest"], 900))
node300600900 = images(
    (["gcr.io/300:latest"], 300), (["gcr.io/600:latest"], 600), (["gcr.io/900:latest"], 900)
)
node400030 = images((["gcr.io/4000:latest"], 4000), (["gcr.io/30:latest"], 30))
node203040 = images((["gcr.io/20:latest"], 20), (["gcr.io/30:latest"], 30), (["gcr.io/40:latest"], 40))

test40250 = spec_pod(["gcr.io/40", "gcr.io/250"])
test40300 = spec_pod(["gcr.io/40", "gcr.io/300"])
test_min_max = spec_pod(["gcr.io/10", "gcr.io/4000"])
test300600900 = spec_pod(["gcr.io/300", "gcr.io/600", "gcr.io/900"])
test3040 = spec_pod(["gcr.io/30", "gcr.io/40"])
test30_init300 = spec_pod(["gcr.io/30"], init=["gcr.io/300"])


def case(name: str, p: Obj, nodes: list[tuple[str, list[tuple[list[str], int]]]], want: list[int]) -> Obj:
    return {
        "name": name,
        "kind": "score",
        "args": {},
        "pod": p,
        "nodes": [node(n, images=imgs) for n, imgs in nodes],
        "existingPods": [],
        "expected": {n: s for (n, _), s in zip(nodes, want, strict=True)},
    }


cases = [
    case(
        "two images spread on two nodes, prefer the larger image one",
        test40250,
        [("node1", node403002000), ("node2", node25010)],
        [0, 5],
    ),
    case(
        "two images on one node, prefer this node",
        test40300,
        [("node1", node403002000), ("node2", node25010)],
        [7, 0],
    ),
    case("if exceed limit, use limit", test_min_max, [("node1", node400030), ("node2", node25010)], [100, 0]),
    case(
        "if exceed limit, use limit (with node which has no images present)",
        test_min_max,
        [("node1", node400030), ("node2", node25010), ("node3", [])],
        [66, 0, 0],
    ),
    case(
        "pod with multiple large images, node2 is preferred",
        test300600900,
        [("node1", node60040900), ("node2", node300600900), ("node3", [])],
        [32, 36, 0],
    ),
    case("pod with multiple small images", test3040, [("node1", node203040), ("node2", node400030)], [1, 0]),
    case(
        "include InitContainers: two images spread on two nodes, prefer the larger image one",
        test30_init300,
        [("node1", node403002000), ("node2", node203040)],
        [6, 0],
    ),
]

skipped = [
    {
        "name": "TestNormalizedImageName",
        "why": "tests a helper, not a plugin verdict; the table is in tests/plugins/test_imagelocality.py",
    }
]

write("ImageLocality", "pkg/scheduler/framework/plugins/imagelocality/image_locality_test.go", cases, skipped)
