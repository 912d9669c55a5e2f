"""Write MQ2007-agg with each rank feature r as 1/r, for networks: a missing rank stays missing.

MQ2007-agg's 21 features are the positions at which 21 input rankings place a document; a
ranking that left the document out has no entry, which a sparse matrix holds as 0. Trees read an
absent entry as missing and learn where to send it; a network reads it as the number 0, a
position ahead of the first. With 1/r a missing rank is 0, behind every ranked position, and the
order of the ranked positions is kept (reversed): trees can split them as before (XGBoost's
histogram bins move a little, so its results do too). The
folders (``Fold1`` .. ``Fold5`` with ``train.txt``, ``vali.txt``, ``test.txt``, the query ids of
the bundled files) are read by ``gbdt-plrank compare --data FOLDER``.

    python -m research.neural_reciprocal_ranks /tmp/mq2007-agg-rr
"""

from __future__ import annotations

import argparse
from pathlib import Path

from sklearn.datasets import dump_svmlight_file

from gbdt_plrank.datasets import load_dataset


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("folder", type=Path, help="where to write Fold1 .. Fold5")
    parser.add_argument("--data", default="mq2007-agg")
    args = parser.parse_args(argv)
    for fold in range(1, 6):
        data = load_dataset(args.data, fold=fold)
        out = args.folder / f"Fold{fold}"
        out.mkdir(parents=True, exist_ok=True)
        for name, split in (("train", data.train), ("vali", data.vali), ("test", data.test)):
            X = split.X.tocsr(copy=True)
            X.eliminate_zeros()
            X.data = 1.0 / X.data
            dump_svmlight_file(
                X, split.y, str(out / f"{name}.txt"), zero_based=False, query_id=split.qid
            )


if __name__ == "__main__":
    main()
