"""SeriesIndex: label-set texts -> ids, parsed once per GPU for all metrics (the texts less
their ``__name__`` member), with the same keys and label sets as parsing each text whole."""

import json
from itertools import chain

import pytest

from sources.prometheus.chunks import SeriesIndex
from sources.prometheus.decode import DecodeError

GPU = {
    "Hostname": "gpu-001",
    "UUID": "GPU-1",
    "device": "nvidia0",
    "gpu": "0",
    "hpc_job": "17",
    "modelName": "NVIDIA H200",
    "_z": "after __name__",
    "__a": "before __name__",
}


def text(labels: dict[str, str]) -> bytes:
    """As Prometheus writes a series' labels: compact JSON, names sorted."""
    return json.dumps(dict(sorted(labels.items())), separators=(",", ":")).encode()


def whole(metric: str, raw: bytes) -> tuple[tuple[str, ...], dict[str, str]]:
    """The key and label set of parsing ``raw`` whole (the reference)."""
    labels = json.loads(raw)
    labels.setdefault("__name__", metric)
    return (metric, *chain.from_iterable(sorted(labels.items()))), labels


def check(index: SeriesIndex, metric: str, texts: list[bytes]) -> None:
    ids = index.ids(metric, texts)
    for i, raw in zip(ids.tolist(), texts, strict=True):
        key, labels = whole(metric, raw)
        assert index.keys[i] == key
        assert index.labels[i] == labels


def test_one_gpus_series_of_every_metric_get_their_own_ids_and_full_labels():
    index = SeriesIndex()
    metrics = ["DCGM_FI_DEV_GPU_UTIL", "DCGM_FI_PROF_SM_ACTIVE", "DCGM_FI_DEV_FB_USED"]
    for metric in metrics:
        check(index, metric, [text({**GPU, "__name__": metric}), text({**GPU, "gpu": "1", "__name__": metric})])
    assert len(index.keys) == 6 and len(set(index.keys)) == 6
    again = index.ids(metrics[1], [text({**GPU, "__name__": metrics[1]})])
    assert index.keys[int(again[0])][0] == metrics[1] and len(index.keys) == 6  # known: same id


def test_name_written_last_or_missing_or_spaced_is_parsed_whole():
    index = SeriesIndex()
    upper = {"Hostname": "h", "UUID": "GPU-2"}  # every name sorts before __name__: it is the last member
    check(index, "m", [text({**upper, "__name__": "m"})])
    check(index, "m", [text(upper)])  # aggregations drop __name__: the series is named after the question
    check(index, "m", [b'{"UUID": "GPU-3", "__name__": "m"}'])
    assert len(index.keys) == 2  # the first two are the same series


def test_a_label_value_spelling_the_name_member_is_left_alone():
    index = SeriesIndex()
    tricky = {**GPU, "job": '"__name__":"m",', "__name__": "m"}
    check(index, "m", [text(tricky)])
    assert index.labels[0]["job"] == '"__name__":"m",'


def test_another_metrics_series_is_refused():
    with pytest.raises(DecodeError, match="asked for m, the answer has a series of other"):
        SeriesIndex().ids("m", [text({**GPU, "__name__": "other"})])


def test_a_second_name_member_is_judged_on_the_whole_text():
    raw = b'{"UUID":"GPU-1","__name__":"m","__name__":"other"}'  # JSON keeps the last
    with pytest.raises(DecodeError, match="series of other"):
        SeriesIndex().ids("m", [raw])


def test_parsed_label_sets_and_texts_mix():
    index = SeriesIndex()
    ids = index.ids("m", [text({**GPU, "__name__": "m"}), {**GPU}, text({**GPU, "gpu": "9", "__name__": "m"})])
    assert ids[0] == ids[1] != ids[2]
