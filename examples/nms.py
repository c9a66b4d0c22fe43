"""Greedy IoU non-maximum suppression as a class-style operator (the seed's advice:
stateful, complex operators such as NMS as an ``AscendOperator``).

The operator holds its IoU threshold (a compile-time constant: another threshold
compiles another kernel), is compiled once for any number of boxes
(``dynamic_shape=True``) and returns the keep mask, checked here to equal a vectorized
numpy NMS exactly.
"""

import numpy as np

from pyasc import AscendOperator


class NMS(AscendOperator):
    hybrid_options = dict(dynamic_shape=True)  # one kernel for any number of boxes

    def __init__(self, iou_threshold=0.5):
        self.iou_threshold = iou_threshold

    def iou(self, boxes, areas, i, j):
        xx1 = max(boxes[i, 0], boxes[j, 0])
        yy1 = max(boxes[i, 1], boxes[j, 1])
        xx2 = min(boxes[i, 2], boxes[j, 2])
        yy2 = min(boxes[i, 3], boxes[j, 3])
        inter = max(xx2 - xx1, 0.0) * max(yy2 - yy1, 0.0)
        return inter / (areas[i] + areas[j] - inter)

    def compute(self, boxes, scores):
        order = np.argsort(-scores)
        areas = (boxes[:, 2] - boxes[:, 0]) * (boxes[:, 3] - boxes[:, 1])
        keep = np.zeros(scores.shape[0], dtype=bool)
        kept = np.zeros(scores.shape[0], dtype=np.int64)
        count = 0
        for a in range(order.shape[0]):
            i = order[a]
            suppressed = False
            for k in range(count):
                if self.iou(boxes, areas, i, kept[k]) > self.iou_threshold:
                    suppressed = True
                    break
            if not suppressed:
                keep[i] = True
                kept[count] = i
                count += 1
        return keep


def nms_numpy(boxes, scores, iou_threshold=0.5):
    """The reference: each kept box suppresses all remaining candidates at once."""
    order = np.argsort(-scores)
    x1, y1, x2, y2 = boxes[:, 0], boxes[:, 1], boxes[:, 2], boxes[:, 3]
    areas = (x2 - x1) * (y2 - y1)
    keep = np.zeros(scores.shape[0], dtype=bool)
    while order.size > 0:
        i = order[0]
        keep[i] = True
        rest = order[1:]
        w = np.maximum(np.minimum(x2[i], x2[rest]) - np.maximum(x1[i], x1[rest]), 0.0)
        h = np.maximum(np.minimum(y2[i], y2[rest]) - np.maximum(y1[i], y1[rest]), 0.0)
        inter = w * h
        order = rest[inter / (areas[i] + areas[rest] - inter) <= iou_threshold]
    return keep


def random_boxes(rng, n):
    """``n`` boxes (x1, y1, x2, y2) in a 100 x 100 image, and distinct scores."""
    xy = rng.random((n, 2)).astype(np.float32) * 80
    wh = rng.random((n, 2)).astype(np.float32) * 20 + 1
    return np.concatenate([xy, xy + wh], axis=1), rng.permutation(n).astype(np.float32) / n


def _inputs(rng, size):
    return random_boxes(rng, {"small": 200, "default": 2000}[size])


def check(sizes=(1, 50, 300), thresholds=(0.5, 0.3)):
    """Compare the operator with the numpy NMS; returns the lines to print."""
    rng = np.random.default_rng(0)
    lines = []
    for t in thresholds:
        nms = NMS(t)
        for n in sizes:
            boxes, scores = random_boxes(rng, n)
            keep = nms(boxes, scores)
            assert keep.dtype == bool and np.array_equal(keep, nms_numpy(boxes, scores, t))
            lines.append(f"nms: {n} boxes, IoU threshold {t}: keeps {keep.sum()}, "
                         "equal to numpy")
    compiled = len(NMS(0.5).specializations)
    assert compiled <= len(thresholds)  # (interpret compiles nothing)
    lines.append(f"nms: {compiled} kernel(s) compiled for {len(sizes)} sizes x "
                 f"{len(thresholds)} thresholds")
    return lines


DEMO_CASES = [{"name": "nms", "fn": NMS(0.5), "inputs": _inputs, "reference": nms_numpy}]

if __name__ == "__main__":
    print("\n".join(check()))
