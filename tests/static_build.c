/* static_build.c - the whole suite as one translation unit, for -DKCTL_STATIC
   (where every kctl function is static and so private to the file that
   includes the implementation). */
#include "run.c"
#include "test_core.c"
#include "test_limiter.c"
#include "test_queue.c"
#include "test_json.c"
#include "test_obj.c"
#include "test_indexer.c"
#include "test_fifo.c"
#include "test_selector.c"
#include "test_memstore.c"
#include "test_reflector.c"
#include "test_informer.c"
#include "test_controller.c"
#include "test_manager.c"
#include "test_leader.c"
#include "test_e2e.c"
