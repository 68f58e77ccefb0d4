# SPDX-License-Identifier: GPL-2.0-only
"""pyverbs' libibverbs enums as one flat namespace, whatever the rdma-core.

rdma-core up to 64 exports the IBV_* constants flat from pyverbs.enums
(Debian 12's 44 has only that module); rdma-core 65 dropped it and groups
them in IntFlag classes of pyverbs.libibverbs_enums
(ibv_qp_type.IBV_QPT_RC). verbs_enums() returns a namespace with every
IBV_* name either way, usable where pyverbs takes the integers.
"""

import enum
import types


def verbs_enums():
    try:
        import pyverbs.enums as flat
        return flat
    except ImportError:
        pass
    import pyverbs.libibverbs_enums as grouped
    ns = types.SimpleNamespace()
    for cls in vars(grouped).values():
        if isinstance(cls, type) and issubclass(cls, enum.Enum):
            for member in cls:
                setattr(ns, member.name, member)
    return ns
