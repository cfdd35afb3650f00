"""Every primitive of functrax, defined once with its family and abstract evaluation, beside
the thin wrappers that bind it (``functrax.lax`` re-exports those).

``primitive_registry`` maps names to primitives (the registry tests check that each has its
rule in every table). The modules are imported in order; ``printing`` registers the
primitives whose params JAX prints specially.
"""
from functrax.primitives.define import primitive_registry  # noqa: F401
from functrax.primitives.contraction import *  # noqa: F401,F403
from functrax.primitives.contraction import dot_general_p  # noqa: F401
from functrax.primitives.convolution import *  # noqa: F401,F403
from functrax.primitives.elementwise import *  # noqa: F401,F403
from functrax.primitives.elementwise_extra import *  # noqa: F401,F403
from functrax.primitives.indexing import *  # noqa: F401,F403
from functrax.primitives.reductions import *  # noqa: F401,F403
from functrax.primitives.shape import *  # noqa: F401,F403
from functrax.primitives.gather_scatter import *  # noqa: F401,F403,E402
from functrax.primitives.windows import *  # noqa: F401,F403,E402
from functrax.primitives import printing as _printing  # noqa: F401,E402
from functrax.primitives.collectives import *  # noqa: F401,F403,E402
from functrax.primitives.prng import *  # noqa: F401,F403,E402
from functrax.primitives.linalg import *  # noqa: F401,F403,E402
from functrax.primitives.linalg_more import *  # noqa: F401,F403,E402
from functrax.primitives.fft import *  # noqa: F401,F403,E402
from functrax.primitives.control_flow import *  # noqa: F401,F403,E402
from functrax.primitives.calls import *  # noqa: F401,F403,E402
from functrax.primitives.shard_map import *  # noqa: F401,F403,E402
from functrax.primitives.attention import *  # noqa: F401,F403,E402
from functrax.primitives.callbacks import *  # noqa: F401,F403,E402
from functrax.primitives.compositions import *  # noqa: F401,F403,E402
from functrax.primitives.barrier import *  # noqa: F401,F403,E402
from functrax.primitives.names import *  # noqa: F401,F403,E402
from functrax.primitives.sharding_constraint import *  # noqa: F401,F403,E402
from functrax.primitives.rng_bit_generator import *  # noqa: F401,F403,E402
from functrax.primitives.special import *  # noqa: F401,F403,E402
