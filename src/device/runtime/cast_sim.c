/* The cast kernel compiled by the host compiler, for the simulator backend. */
#define UFG_CAST_LAUNCHER ufg_cast_launch_sim
#include "cast_kernel.h"
