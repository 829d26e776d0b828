/* kctl.h v0.4.0 - Kubernetes-style controller toolkit in one C header - MIT licence (end of file) */
/*
    kctl keeps a piece of the world equal to a declared desired state, the way
    Kubernetes controllers do, with the pipeline of client-go in plain C99:
    list+watch, a delta FIFO, a local indexed cache, a de-duplicating
    rate-limited work queue and an idempotent reconcile loop.

    Do this:
        #define KCTL_IMPLEMENTATION
    before you include this file in *one* C or C++ file to create the
    implementation. Every other file includes it without the define.

    Build with: cc -std=c99 ... -pthread
    The implementation needs POSIX; kctl.h asks for it (_POSIX_C_SOURCE
    200809L) when it is the first include of the implementation's file.
    Otherwise compile with -D_POSIX_C_SOURCE=200809L (an #error says so).

    What is here: the foundation (result codes, allocator and logger hooks,
    the clock, real and virtual), the rate limiters and client-go's
    three-layer work queue; and of the cache side, a strict JSON reader and
    writer with getters by path, objects, label and field selectors, the
    indexer (the local cache), the delta FIFO, the transport interface with
    an API server's Status detail, the API-server rules every store shares,
    and the embedded store (memstore: Kubernetes semantics in process,
    persisted to a file); and of the controller side, the reflector, the
    informer, the controller, leader election and the manager. Still to
    come: the remote transports (kctl_http_curl.h); see VERSION HISTORY.


    TABLE OF CONTENTS
    =================
    The declarations come in data-flow order, then the implementation in
    the same order; a section's two banners carry one tag, so searching
    for ">>tag" finds both. Private names (kctl__x) carry their section's
    prefix.
        tag           section            private prefix
        >>platform    PLATFORM           kctl__mutex_ kctl__cond_ kctl__rwlock_ kctl__port_
                                         kctl__posix_ (implementation only: the port,
                                         KCTL_PORT_*: clock, sleep, wall time, locks,
                                         threads, atomics; files; KCTL_PORT_CUSTOM:
                                         bring your own, see PORTING)
        >>version     VERSION
        >>results     RESULT CODES       (KCTL_RESULTS: the one list)
        >>alloc       ALLOCATOR          kctl__alloc kctl__free
        >>text        TEXT AND SORT      kctl__fmt kctl__vfmt kctl__sort (implementation only)
        >>log         LOGGING            (KCTL_LOG_ITEMS)
        >>map         KEY MAP            kctl__map_ kctl__node (implementation only)
        >>clock       CLOCK              kctl__vclock_ kctl__time_ (RFC 3339)
        >>json        JSON               kctl__j kctl__jw_ kctl__jmembers
        >>obj         OBJECTS            kctl__obj_ kctl__ob_
        >>selector    SELECTORS          kctl__sel_ kctl__name_ (Kubernetes names)
        >>indexer     INDEXER            kctl__ix_ kctl__pset_
        >>fifo        DELTA FIFO         kctl__fifo_ kctl__fitem
        >>transport   TRANSPORT          kctl__tp_ kctl__st_ kctl__jdoc kctl__bprintf
        >>apisrv      API-SERVER RULES   kctl__as_
        >>memstore    MEMSTORE           kctl__ms_ (persistence: kctl__ms_snapshot, _load;
                                         the journal: kctl__jnl_, the file layer kctl__fs_)
        >>reflector   REFLECTOR          kctl__rf_
        >>informer    INFORMER           kctl__inf_
        >>checkpoint  CHECKPOINT         kctl__ckpt_ kctl__cbuf kctl__crd kctl__crc32
        >>limiter     RATE LIMITERS      kctl__perkey kctl__bucket kctl__maxof
        >>queue       WORK QUEUE         kctl__queue_ kctl__qent kctl__heap_
        >>predicate   PREDICATES         kctl__pred_
        >>controller  CONTROLLER         kctl__ctl_
        >>leader      LEADER ELECTION    kctl__le_
        >>manager     MANAGER            kctl__mgr_ kctl__pm (metrics)
        >>reported    REPORTED STATE     kctl__rep_


    QUICK START
    ===========
    A worker pool that reconciles keys, backing off on errors:

        #define KCTL_IMPLEMENTATION
        #include "kctl.h"

        static int reconcile(const char *key);      // yours: 0 or an error

        static void *worker(void *arg) {
            kctl_queue *q = (kctl_queue *)arg;
            const char *key;
            while (kctl_queue_get(q, &key) == KCTL_OK) {  // blocks
                if (reconcile(key) != 0)
                    kctl_queue_add_rate_limited(q, key);  // 5 ms, 10 ms, ... 1000 s
                else
                    kctl_queue_forget(q, key);            // reset the backoff
                kctl_queue_done(q, key);                  // key valid until here
            }
            return NULL;                                  // KCTL_ERR_SHUTDOWN
        }

        int main(void) {
            kctl_queue *q;
            if (kctl_queue_create(NULL, &q) != KCTL_OK) return 1;
            pthread_t t; pthread_create(&t, NULL, worker, q);
            kctl_queue_add(q, "default/web");             // from event handlers
            kctl_queue_add(q, "default/web");             // de-duplicated
            kctl_queue_shutdown_with_drain(q);            // finish in-flight work
            pthread_join(t, NULL);
            kctl_queue_destroy(q);
        }


    A controller: one reconcile function, everything else from the manager
    (examples/hello_controller.c is this, complete):

        static kctl_reconcile_result reconcile(const kctl_reconcile_ctx *ctx) {
            kctl_reconcile_result r = { 0 };
            char image[128];
            if (!ctx->obj) return r;                      // deleted: clean up ctx->name
            kctl_obj_get_string(ctx->obj, "spec.image", image, sizeof image, NULL);
            if (deploy(ctx->name, image) != 0)            // yours
                r.error = KCTL_ERR_IO;                    // the error: backoff
            else                                          // (never a fixed requeue)
                r.error = kctl_status_update(&ctx->transport, &res, ctx->obj,
                              "{\"phase\":\"Ready\"}", KCTL_NTS, NULL, NULL, NULL);
            return r;                                     // unchanged: not written
        }

        kctl_manager_desc md = { 0 };
        kctl_controller_desc cd = { 0 };
        md.transport = kctl_memstore_transport(store);    // or any transport
        kctl_manager_create(&md, &m);
        kctl_manager_informer(m, &res, NULL, NULL, &cd.primary); // shared
        cd.reconcile = reconcile;
        kctl_manager_add_controller(m, &cd, NULL);
        kctl_manager_run_until_signal(m);                 // until SIGINT/SIGTERM


    CONCEPTS
    ========
    Each part carries the name of its client-go counterpart:

        kctl                           client-go (k8s.io/client-go/util/workqueue)
        ----                           ---------
        kctl_queue_add / get / done    Type.Add / Get / Done
        kctl_queue_add_after           DelayingInterface.AddAfter
        kctl_queue_add_rate_limited    RateLimitingInterface.AddRateLimited
        kctl_queue_forget              RateLimitingInterface.Forget
        kctl_queue_num_requeues        RateLimitingInterface.NumRequeues
        kctl_queue_shutdown(_with_drain) ShutDown / ShutDownWithDrain
        kctl_limiter_exponential       ItemExponentialFailureRateLimiter
        kctl_limiter_bucket            BucketRateLimiter (x/time/rate.Limiter)
        kctl_limiter_fast_slow         ItemFastSlowRateLimiter
        kctl_limiter_max_of            MaxOfRateLimiter
        kctl_limiter_default           DefaultControllerRateLimiter
        kctl_queue_stats               workqueue metrics (depth, adds, ...)
        kctl_queue_desc.pending_after  (kubernetes#112325, #112328's modes:
                                       KEEP = client-go, CANCEL = PreemptWaiting;
                                       MERGE = controller-runtime's priority
                                       queue: one entry, earliest time)
        kctl_queue_add_low             controller-runtime priorityqueue's
                                       AddWithOpts(Priority: low), with aging
        kctl_vclock                    k8s.io/utils/clock/testing.FakeClock

        kctl                           client-go (k8s.io/client-go/tools/cache)
        ----                           ---------
        kctl_obj                       a runtime.Object in the cache, shared
        kctl_indexer                   Indexer (cache.NewIndexer)
        kctl_indexer_by_index          Indexer.ByIndex
        "namespace" index              cache.MetaNamespaceIndexFunc
        kctl_fifo                      DeltaFIFO (with KnownObjects)
        kctl_delta final_state_unknown DeletedFinalStateUnknown
        kctl_selector                  labels.Selector, fields.Selector
        kctl_reflector                 Reflector (ListAndWatch, backoff, resync)
        kctl_informer                  SharedIndexInformer (cache + handlers)
        kctl_handler                   ResourceEventHandlerFuncs
        kctl_handler.resync            a handler's resync period: syncs reach it
        kctl_informer_event_from_list  OnAdd's isInInitialList, widened to
                                       relists and resyncs
        kctl_key_split                 SplitMetaNamespaceKey
        kctl_transport_get/create/...  dynamic client (Get, Create, Update,
                                       UpdateStatus, Patch(MergePatchType), Delete)
        kctl_api_status                metav1.Status of an apierrors.StatusError
        kctl_api_status_result         apierrors.IsNotFound, IsConflict, ...
        kctl_apisrv_decide             the API server's registry (rest.BeforeCreate,
                                       BeforeUpdate, BeforeDelete, validation)

        kctl                           controller-runtime
        ----                           ------------------
        kctl_controller                controller.Controller (Reconciler, workers)
        kctl_reconcile_result          reconcile.Result + error (terminal: TerminalError)
        kctl_controller_watch_owned    Owns (handler.EnqueueRequestForOwner,
                                       OnlyControllerOwner; group and kind)
        kctl_reconcile_ctx ns, name    reconcile.Request.NamespacedName
        kctl_controller_watch_map      Watches + handler.EnqueueRequestsFromMapFunc
        kctl_predicate                 predicate.GenerationChangedPredicate, ...
        kctl_status_update             a status write, only when it changes
        kctl_retry_on_conflict         client-go retry.RetryOnConflict
        kctl_leader                    client-go leaderelection (a Lease)
        kctl_leader_release            LeaderElectionConfig.ReleaseOnCancel
        kctl_manager                   manager.Manager (caches, controllers, metrics)
        kctl_informer_set_checkpoint   (KubeEdge / OpenYurt node-local cache)
        kctl_reported                  (AWS IoT shadow / Azure twin "reported")

    The queue has three layers, as in client-go:
      - the queue: FIFO order of distinct keys; a key already waiting is not
        added twice; a key handed out by get and not yet done is held back when
        added again and queued once at done, so one key is never processed by
        two workers at once;
      - delaying: add_after(key, d) makes the key ready at now+d; an earlier
        time wins, a later one never postpones it; an add meanwhile queues
        the key at once and leaves the delayed add in place: at its time
        the key is added again (nothing happens if it still waits; a key
        already handed out is processed once more), as in client-go. An
        option (kctl_queue_desc.pending_after, kubernetes#112325) makes
        the add cancel the delayed one instead (CANCEL: one run, now), or
        keeps one pending run per key at the earliest time asked (MERGE);
      - rate limiting: add_rate_limited(key) = add_after(key, limiter's delay).
    Priority with aging, an option (kctl_queue_desc.priority; off: one
    FIFO, as client-go): kctl_queue_add_low queues work that can wait (a
    controller's list and resync events) behind the normal keys; a low key
    that has waited the aging period (10 s) then gets every other hand-out,
    so fresh edits go first and nothing starves (kctl_priority_desc).
    No thread runs the delaying layer: workers blocked in get wait until the
    next ready time (on a virtual clock, until the clock is advanced), and a
    delayed key whose time has come counts as added at that time, ahead of
    any key added later.

    The informer tells its handlers of changes. An update whose
    resourceVersion did not change (the periodic resync, or an object a
    relist finds as the cache has it) is a sync: it reaches only handlers
    that set kctl_handler.resync, as client-go's shared informer sends syncs
    only to handlers with a resync period; a controller's watches ask for
    them exactly when their informer has a resync_ns. So a relist after a
    link flap wakes the controllers only for what changed.

    EDGE AUTONOMY
    -------------
    Checkpoint and resume (CHECKPOINT below): kctl_informer_set_checkpoint
    gives an informer a checkpoint (a file written atomically, or your
    save/load callbacks): its cache and last resourceVersion, written every
    N events, every T on its clock and at stop. At the next start it is
    loaded at once: has_synced turns true and reconciles run from it while
    the store is unreachable, and the watch resumes from the saved version,
    relisting only on GONE. A corrupt, truncated or old-format checkpoint is
    discarded whole, with a logged reason.
    Reported state (REPORTED STATE below): kctl_reported_set_* at any rate;
    kctl_reported_step writes the status coalesced, compare-before-write,
    at most the configured writes per second per object (a token bucket),
    retrying conflicts with a re-read and backing off on errors.

    Metrics: kctl_queue_read_stats returns client-go's workqueue figures.
    As client-go does, a queue records durations (queue and work duration,
    unfinished work, longest running) only when it has a name, since they
    cost a clock read per add, get and done; the counters (depth, adds,
    retries) are always kept.


    DOES NOT
    ========
    - start threads you did not ask for: the queue, the reflector and the
      informer run on yours (kctl_informer_step, kctl_controller_step,
      kctl_controller_poll, kctl_manager_step); kctl_informer_start,
      kctl_controller_start and kctl_manager_start start theirs (none with
      KCTL_NO_THREADS);
    - wake an idle device on a timer: a stepped manager asks to run again
      only when something is due (see THE STEP LOOP);
    - allocate per queue operation beyond the key's own entry (entries are
      recycled, so the steady state allocates nothing);
    - abort on bad input: every fallible call returns a result code;
    - keep any global state.


    COMPILE-TIME OPTIONS
    ====================
        option               where            meaning
        KCTL_IMPLEMENTATION  one file         emit the implementation
        KCTL_STATIC          everywhere       every function is static (private to the file)
        KCTL_NO_THREADS      everywhere       no pthreads: no locks, nothing blocks;
                                              kctl_queue_get behaves as try_get
        KCTL_MAX_KEY_LEN     implementation   longest key in bytes (default 4096)
        KCTL_MALLOC(sz, ud)  implementation   the default allocator (malloc)
        KCTL_FREE(p, ud)     implementation   the default free (free)
        KCTL_NO_LOG_STRINGS  implementation   drop log message strings (ids remain)
        KCTL_LIBC_STRINGS    implementation   under -Os too, the C library's strcmp,
                                              strncmp, strlen, strchr, memmove,
                                              memcmp, memchr, (32-bit) memcpy and
                                              64-bit division (default under -Os:
                                              kctl's own small ones, see LIBC)
        KCTL_QUEUE_SPIN      implementation   nanoseconds an idle worker spins
                                              for work before it parks (default
                                              5000; 0 disables); at most one
                                              worker fewer than the CPUs spins
        KCTL_QUEUE_LINGER    implementation   nanoseconds a spinning worker waits
                                              after a push before it takes the
                                              lock, so a busy producer queues
                                              more first (default 300)
        KCTL_SMALL           implementation   1: smaller code for the same
                                              behaviour: the paths that exist
                                              only to be faster (fingerprints,
                                              recorded tokens, caches of what a
                                              parse would find) are compiled
                                              out and the plain path runs;
                                              0: the fast paths. Default 1
                                              under -Os (__OPTIMIZE_SIZE__),
                                              else 0
        KCTL_LOCK_SPIN       implementation   nanoseconds spent at a busy lock
                                              before parking on it (default 5000)
                                              Spins are bounded by time, stop
                                              while they do not pay off, and
                                              never happen when the process may
                                              run on one CPU only (see PLATFORM)
        KCTL_NO_FILES        implementation   no file I/O: the memstore cannot
                                              persist (a path or a save is
                                              INVALID_ARG; no journal, and
                                              kctl_fs_posix is all zero); an
                                              informer's checkpoint only
                                              through callbacks
        KCTL_PORT_CUSTOM     implementation   your own port (clock, locks,
                                              threads) instead of POSIX: PORTING
        KCTL_THREAD_STACK_SIZE implementation stack of each thread kctl starts
                                              (informers, workers, the leader
                                              elector), in bytes; default 0:
                                              the port's (glibc: 8 MiB of
                                              address space; POSIX raises a
                                              size below PTHREAD_STACK_MIN)
    Trim switches (implementation only; the declarations stay, and what is
    compiled out answers KCTL_ERR_UNSUPPORTED, so one header serves every
    build; with -ffunction-sections -Wl,--gc-sections nothing of it links):
        KCTL_NO_MEMSTORE     implementation   no memstore: kctl_memstore_create
                                              is UNSUPPORTED (bring a transport)
        KCTL_NO_LEADER       implementation   no leader election: kctl_leader_create
                                              and a manager with a lease_name are
                                              UNSUPPORTED
        KCTL_NO_METRICS      implementation   no Prometheus text: kctl_manager_metrics
                                              is UNSUPPORTED (the counters and
                                              kctl_queue_read_stats remain)
        KCTL_NO_FLOAT        implementation   no floating point at all (no soft-float
                                              library on an FPU-less MCU): the token
                                              bucket is kctl_limiter_bucket_rate's
                                              integer one (kctl_limiter_bucket returns
                                              NULL), jitter is integer; implies
                                              KCTL_NO_JSON_DOUBLE
        KCTL_NO_SELECTORS    implementation   label and field selectors compiled
                                              out (the parser and matcher):
                                              kctl_selector_parse of anything
                                              but an empty selector (NULL, "",
                                              whitespace; fields: commas) is
                                              UNSUPPORTED, and so are what take
                                              one (an informer's or reflector's
                                              create, the memstore's list and
                                              watch); everything else selects
                                              everything, as without the switch
        KCTL_NO_CHECKPOINT   implementation   no informer checkpoints (CHECKPOINT):
                                              kctl_informer_set_checkpoint and
                                              kctl_informer_checkpoint_save are
                                              UNSUPPORTED, the stats all zero
        KCTL_NO_MERGE_PATCH  implementation   JSON merge patch compiled out:
                                              kctl_json_merge_patch makes the
                                              writer's error UNSUPPORTED, and so
                                              are what patch (the memstore's
                                              and kctl_apisrv_decide's PATCH,
                                              kctl_transport_patch on a
                                              transport without patch) and
                                              kctl_reported_create; implies
                                              KCTL_NO_LEADER (the elector
                                              writes its Lease by merge patch)
        KCTL_NO_JSON_DOUBLE  implementation   JSON numbers as doubles compiled out:
                                              kctl_json_double, kctl_json_get_double,
                                              kctl_json_value_get_double and
                                              kctl_obj_get_double return UNSUPPORTED,
                                              kctl_jw_double makes the writer's
                                              error UNSUPPORTED; integers (int64,
                                              uint64) and exact number comparison
                                              are unaffected
        KCTL_NO_VALIDATION   implementation   the API-server rules (kctl_apisrv_decide:
                                              the memstore's writes, etcd's) check
                                              no formats, for a store only its own
                                              code writes: names, namespaces,
                                              generateName, labels, annotations
                                              (and their 256 KiB), finalizers and
                                              owner references are kept as sent;
                                              a refusal's kctl_api_status has its
                                              code, reason and details but no
                                              message and no causes (the result
                                              codes are unchanged). What a store
                                              needs stays: a create's name (1 to
                                              253 bytes) and namespace (at most
                                              63) without '/', '|', space or
                                              control bytes, NUL nowhere (422 and
                                              400 as before); a shape the object
                                              cannot hold (labels not a map of
                                              strings, say) is refused by the
                                              object build (400), the size
                                              limits (413) as before;
                                              resourceVersion and uid
                                              preconditions, AlreadyExists,
                                              NotFound, uid, creationTimestamp,
                                              generation, the status subresource,
                                              finalizers and deletion (422 for a
                                              new finalizer while deleting) as
                                              without it; kctl_apisrv_check (the
                                              loader's) refuses what a create does
        KCTL_NO_GENERATE_NAME implementation  no names made from generateName: a
                                              create (or an owner's apply that
                                              creates) without metadata.name but
                                              with metadata.generateName is
                                              UNSUPPORTED and nothing is written
                                              (the memstore's, etcd's,
                                              kctl_apisrv_decide); a create with
                                              a name is as without the switch
        KCTL_NO_QUEUE_PRIORITY implementation no priority with aging in the queue:
                                              a queue desc (or a controller's)
                                              with priority.enabled is
                                              UNSUPPORTED; kctl_queue_add_low is
                                              kctl_queue_add (one FIFO, as
                                              client-go)
        KCTL_NO_PENDING_MODES implementation  no pending_after modes but KEEP
                                              (client-go's): a queue or
                                              controller desc with
                                              KCTL_PENDING_CANCEL or _MERGE is
                                              UNSUPPORTED
        KCTL_NO_DURATIONS    implementation   no duration histograms: a named
                                              queue records no durations (the
                                              stats' queue_duration,
                                              work_duration, unfinished_work_ns
                                              and longest_running_ns stay zero,
                                              and a controller's reconcile_time);
                                              the counters remain. Implies
                                              KCTL_NO_METRICS (its histograms
                                              would be empty)
        KCTL_NO_OFFLINE      implementation   no connectivity-aware retries: a
                                              controller desc with
                                              offline.enabled is UNSUPPORTED
                                              (kctl_controller_create,
                                              kctl_manager_add_controller); every
                                              failure takes client-go's rules
        KCTL_NO_HOLD_BACKOFF implementation   no hold_backoff: a controller desc
                                              with hold_backoff is UNSUPPORTED;
                                              an event for a key in backoff runs
                                              it at once, as client-go's
        KCTL_NO_HOT_LOOP     implementation   no hot-loop detector: a controller
                                              desc with hot_loop.max is
                                              UNSUPPORTED (with KCTL_NO_HOLD_BACKOFF
                                              too, the controller keeps no record
                                              per key)
        KCTL_NO_QUEUE_BOUND  implementation   no bound on a queue's keys: a queue
                                              or controller desc with max_keys
                                              is UNSUPPORTED (a queue holds as
                                              many keys as it is given, as
                                              client-go's)
        KCTL_NO_MEMSTORE_BOUND implementation no bound on the memstore: a desc
                                              with max_objects or max_bytes is
                                              UNSUPPORTED at create (the store
                                              holds what it is given; no bytes
                                              counted per write: the stats count
                                              them when read)
        KCTL_NO_CODEC        implementation   no object codec: object options
                                              with codec.decode are UNSUPPORTED
                                              wherever an object is made with
                                              them (kctl_obj_parse,
                                              kctl_memstore_create, a
                                              checkpoint's load, the
                                              managed-fields transform);
                                              kctl_obj_decoded is NULL
        KCTL_NO_RESYNC       implementation   no periodic resync: a reflector's
                                              or informer's resync_ns (and so a
                                              manager's) is UNSUPPORTED at create
                                              (0: none); relists still give
                                              their syncs
        KCTL_NO_TRANSFORM    implementation   no informer transform: an informer
                                              desc with a transform is
                                              UNSUPPORTED (objects are cached as
                                              they come);
                                              kctl_transform_drop_managed_fields
                                              itself stays
        KCTL_NO_PREDICATES   implementation   no event filters on a controller's
                                              watches: a controller desc with a
                                              predicate, and watch_owned or
                                              watch_map with one, are
                                              UNSUPPORTED (every event queues its
                                              key); kctl_predicate_eval itself
                                              stays
        KCTL_NO_PAGING       implementation   list paging compiled out: every list
                                              is one request for everything (as
                                              an API server answers a list
                                              without a limit). A reflector's or
                                              informer's page_size is UNSUPPORTED
                                              at create (0: no pages); the
                                              memstore's list with a limit or a
                                              continue token is UNSUPPORTED (no
                                              snapshots of lists in progress are
                                              kept, 4 KB of each store); a
                                              reflector takes a list that comes
                                              with a continue token anyway as
                                              failed (PROTO), never as whole
        KCTL_NO_FAULTS       implementation   the memstore's fault injection (for
                                              tests) compiled out: every request
                                              is answered; kctl_memstore_fail_next
                                              is UNSUPPORTED, and
                                              kctl_memstore_break_watches_after
                                              and kctl_memstore_set_latency are
                                              kept but have no effect
        KCTL_NO_INDEXES      implementation   the cache's secondary indexes
                                              compiled out (the buckets every
                                              write keeps up to date):
                                              kctl_indexer_add_index is
                                              UNSUPPORTED (EXISTS for
                                              "namespace"); the built-in
                                              "namespace" index is answered by a
                                              scan of the cache (by_index,
                                              index_keys, list_index_values: the
                                              same results, in time proportional
                                              to the cache rather than the hits)
    A minimal single-threaded controller on the memstore (`make size`):
    KCTL_NO_THREADS KCTL_NO_FILES KCTL_NO_FLOAT KCTL_NO_LEADER KCTL_NO_METRICS
    KCTL_NO_LOG_STRINGS KCTL_NO_VALIDATION KCTL_NO_SELECTORS
    KCTL_NO_CHECKPOINT KCTL_NO_MERGE_PATCH KCTL_NO_PAGING KCTL_NO_FAULTS
    KCTL_NO_INDEXES KCTL_NO_OFFLINE KCTL_NO_HOLD_BACKOFF KCTL_NO_HOT_LOOP
    KCTL_NO_QUEUE_PRIORITY KCTL_NO_PENDING_MODES KCTL_NO_DURATIONS
    KCTL_NO_PREDICATES KCTL_NO_RESYNC KCTL_NO_TRANSFORM KCTL_NO_QUEUE_BOUND
    KCTL_NO_GENERATE_NAME KCTL_NO_MEMSTORE_BOUND KCTL_NO_CODEC, KCTL_SMALL
    (-Os), with a port of your own (PORTING).


    LIBC
    ====
    The implementation calls no C library function beyond this list
    (tests/libc_check.sh checks it with nm on every build of make test):
        always          memcpy memmove memset memcmp memchr strlen strcmp
                        strncmp strchr strrchr; malloc and free only as the
                        defaults of KCTL_MALLOC / KCTL_FREE (an allocator
                        hook or your own macros replace them); abort in
                        debug builds only (without NDEBUG: an internal
                        invariant of the memstore's write path broken)
        the POSIX port  clock_gettime nanosleep errno, sysconf (and
                        sched_getaffinity with _GNU_SOURCE: how many CPUs
                        may spin); with threads the
                        pthread mutex, condition variable (and condattr),
                        create/join (and attr for the stack size),
                        sched_yield, and for kctl_manager_run_until_signal
                        pthread_sigmask sigemptyset sigaddset sigtimedwait;
                        unless KCTL_NO_FILES, open close read write fstat
                        lstat fsync ftruncate readlink rename unlink
    (a port of your own, KCTL_PORT_CUSTOM, replaces the POSIX port's calls
    with yours.) Under -Os (__OPTIMIZE_SIZE__) strcmp strncmp strlen strchr
    memmove memcmp and memchr are kctl's own byte loops, and on 32-bit
    targets so are memcpy and the 64-bit division libgcc would bring (a few
    bytes where newlib's and libgcc's are hundreds; KCTL_LIBC_STRINGS: the
    library's). Numbers are kctl's own: integers are formatted and parsed
    without printf or strtol; messages go through a small snprintf of
    kctl's (%s %c %d %u %x, l/ll/z, width, '0' and '-'); JSON doubles
    are read to the nearest double (ties to even) and written as the
    shortest %.17g-style text that reads back the same, exactly, in
    integer arithmetic (no strtod, no printf's %g; reading a number past
    the fast path takes about 1.1 KB of stack); times are RFC 3339 without
    strftime or gmtime; sorting is a heap sort (no qsort).


    THREADING
    =========
    Every function says its rule: [any thread] may be called from any thread at
    any time; [not thread-safe] needs the caller to serialize. A queue is
    [any thread]: many producers, many workers. Limiters are [any thread].
    Call kctl_queue_destroy only after every thread using the queue is done
    with it (shutdown, then join your workers). Objects are immutable: share
    them across threads freely (references are atomic). The indexer and the
    FIFO are [any thread]; a FIFO's process function runs with the FIFO
    locked and must not call back into it. The JSON reader and getters are
    [any thread] on a parsed document; a writer is [not thread-safe].


    PORTING
    =======
    Everything kctl asks of the system is in PLATFORM, as the KCTL_PORT_*
    macros; POSIX (clock_gettime, pthreads) is the default. Define
    KCTL_PORT_CUSTOM and these before the implementation to bring your own
    (examples/baremetal.c: bare metal on a tick counter; examples/
    port_freertos.h: FreeRTOS with threads):
        KCTL_PORT_NOW_NS()          required: a monotonic uint64_t clock in ns
                                    (the default kctl_clock; never goes back)
        KCTL_PORT_WALL_NS()         ns since 1970 UTC, for the times objects
                                    carry (default: KCTL_PORT_NOW_NS(): no RTC)
        KCTL_PORT_SLEEP_NS(ns)      block the caller (default: wait on the
                                    clock); used only with threads
        KCTL_PORT_YIELD()           let another thread run (default: nothing)
        KCTL_PORT_CPUS()            the CPUs kctl's threads may run on (default:
                                    1, so waiters never spin)
    With threads (not under KCTL_NO_THREADS, which needs only the clock):
        KCTL_PORT_MUTEX             a type; _INIT(m) 0 when done; _DEINIT(m),
                                    _LOCK(m), _UNLOCK(m) (m: a pointer)
        KCTL_PORT_COND              a type; _INIT(c) 0 when done; _DEINIT(c),
                                    _WAIT(c, m), _SIGNAL(c), _BROADCAST(c),
                                    _WAIT_UNTIL(c, m, at_ns): wait at most
                                    until KCTL_PORT_NOW_NS() reads at_ns,
                                    0 when woken (spuriously too), nonzero at
                                    the deadline
        KCTL_PORT_THREAD            a type; _START(t, fn, arg, stack_bytes)
                                    0 when started (fn: void *(*)(void *);
                                    stack_bytes: KCTL_THREAD_STACK_SIZE, 0 the
                                    port's default); _JOIN(t) (t: a pointer)
        KCTL_PORT_ATOMIC_INC(p), _DEC(p)   ++*p and --*p on an unsigned,
                                    giving the new value (DEC acquire-release);
                                    default with gcc and clang: __atomic
        KCTL_PORT_ATOMIC_LOAD(p), _STORE(p, v)  relaxed (optional: without
                                    them idle workers park at once)
    A custom port's mutex and condition variable are used as they are (the
    POSIX port spins a little before it parks); kctl_manager_run, which
    waits for signals, is INVALID_ARG there (use start and stop). A custom
    port with KCTL_NO_FILES needs no POSIX at all: a bare-metal build is
        arm-none-eabi-gcc -mcpu=cortex-m4 -mthumb -Os --specs=nano.specs
            --specs=nosys.specs app.c    (make firmware builds the example)

    THE STEP LOOP
    =============
    Firmware and single-threaded programs (KCTL_NO_THREADS or not) drive a
    manager from their own loop instead of kctl_manager_start: each
    kctl_manager_step does one bounded round (the Lease when due, what each
    informer's transport has ready, up to `budget` reconciles on synced
    caches) and says when the next thing falls due, so the device sleeps
    exactly until then:

        static volatile int woken;                   // or a semaphore, an eventfd
        static void on_wake(void *ud) { (void)ud; woken = 1; }   // from any thread: only record it
        ...
        desc.wake.fn = on_wake;                      // kctl_manager_desc: a watched resource changed
        kctl_manager_create(&desc, &m);              // informers, controllers as usual; no start
        for (;;) {
            uint64_t dl;                             // on desc.clock; UINT64_MAX: nothing due
            if (kctl_manager_step(m, 64, &dl) != KCTL_OK) break;   // SHUTDOWN: lease lost
            wait_until(dl);                          // returns early once woken is set (clear it first)
        }

    budget counts reconciles (0: none this round); a deadline of "now"
    means work is left. The deadline is the earliest of: keys becoming
    ready (add_after, requeue_after, rate-limited retries), resyncs,
    reflector backoffs, watch stall checks (stall_ns), the Lease's next
    renewal or try, once a second after a burst grew a queue's key table
    (that step gives the table back), and, only for a transport without
    watch_notify, a poll every KCTL_REFLECTOR_POLL_NS. Idle, on the
    memstore, with no resync and
    no leader election, that is the stall check, minutes away: no periodic
    tick. A transport that can tell when a watch has news implements
    watch_notify (see TRANSPORT): the memstore calls desc.wake's fn from
    inside each write, on the writer's thread (an interrupt-driven writer
    posts the application's semaphore that way); the etcd and Kubernetes
    transports (kctl_http_curl.h) from a thread that waits on the watch's
    socket (under KCTL_NO_THREADS they have none, and are polled every
    KCTL_REFLECTOR_POLL_NS: the one exception). kctl_controller_poll is
    the same for a controller alone (its informers and its queue).


    MEMORY
    ======
    Objects created by the library take a kctl_allocator (zero = KCTL_MALLOC /
    KCTL_FREE); so do limiters (the kctl_limiter_*_with constructors; a
    queue or controller makes its default limiter with its own). Scratch a
    call frees before returning comes from the allocator of what it works
    on: kctl_status_update's (the token arrays of the status it compares,
    the document it writes) and a merge patch done by get and update
    (kctl_transport_patch on a transport without patch) from the object's
    (the kctl_obj_opts.allocator it was made with); kctl_json_equal, which
    takes none, from KCTL_MALLOC (objects of more than 16 members), and
    kctl_json_equal_with from the one it is given. A queue
    entry (about 180 bytes for keys of up to 23 bytes, 8 more per 8 bytes of
    key beyond) exists while its key is waiting, delayed or being processed;
    entries of finished keys are pooled (at most about 1300 of them) and
    reused, so once the pool is warm, queue operations do not call the
    allocator. The queue's tables grow with the number of keys it holds
    and shrink once mostly empty, a second after they last grew (when a
    worker or a step finds nothing ready, keys delayed or in flight or
    not). The JSON reader never allocates: the caller
    gives it token storage (a counting pass says how much), and the getters
    by path need none. Comparing or merge-patching objects of more than 16
    members sorts their names in temporary memory (kctl_json_equal from
    KCTL_MALLOC, kctl_json_equal_with from its allocator, merge patch from
    its writer's allocator). An object is one
    allocation (header, metadata arrays, its document and unescaped metadata
    strings); the cache, the FIFO and the handlers share it by reference.

    Budgets. Every container that grows with the data takes a bound, and
    refuses past it with KCTL_ERR_FULL, logged and counted; nothing it
    accepted is dropped:
        queue      kctl_queue_desc.max_keys / kctl_controller_desc.max_keys:
                   a new key is refused, a key held is always accepted;
                   the informer's resync or relist finds a refused key
                   again (stats.refused_total, workqueue_refused_total)
        cache      kctl_informer_desc / kctl_indexer_desc max_objects and
                   max_bytes (JSON document bytes): an object refused is
                   not cached nor told and a relist after the reflector's
                   backoff offers it again (stats.cache_full)
        memstore   kctl_memstore_desc max_objects and max_bytes: the write
                   is refused (507 InsufficientStorage), the store
                   unchanged (kctl_memstore_stats.refused_full); history
                   (default 1024) bounds the events kept, the ring grows
                   to it as writes come (an empty store holds none)
        transform  kctl_informer_desc.transform rewrites objects before
                   they are cached (kctl_transform_drop_managed_fields)
    Once warm, a running controller (informer, FIFO, cache, queue, limiter,
    controller) allocates nothing per event: the FIFO and the queue reuse
    their entries; the store allocates the object written and frees its
    scratch before it returns (tests/test_budget.c counts it).

    Worst case, 64-bit, in bytes; K = max_keys, N = max_objects, B =
    max_bytes, H = history, L = key length, O(d) = one object of a d-byte
    document (one allocation: d + about 100 for the header and the metadata
    arrays and strings, more with many labels; about 2d + 128 at most in
    practice), a map costs at most 24 bytes a key (36 while it doubles):
        queue      1.4 K + 3K x (160 + max(16, L + 1 rounded up to 8))
                   + 2K x 24 (map) + 16K (delay heap)
                   (at most K keys live, K idle entries awaiting reuse and
                   min(K, 256) pooled)
        limiters   the default: about 700, + (48 + L) per key with failures
                   recorded (the controller forgets a key when it succeeds)
        cache      1.2 K + N x (48 + 24 x indexes) + the objects: B + N x
                   (O(0)) when the informer owns them; shared with an
                   in-process store (no copy)
        informer   cache + 1.5 K + FIFO: (80 + L + 24 x deltas) per key
                   queued (a relist queues every object listed, the bound
                   of the cache notwithstanding: the list's objects and an
                   8-byte pointer each are held while it is handed over)
                   + 64 pooled items
        memstore   5 K + N x (56 + storage key) + 48 H (ring; 1.5x while it
                   doubles) + the objects: B + N x O(0) for the current
                   ones, and up to 2H older versions the events keep (each
                   at most the largest O(d)) + 8 bytes a listed object for
                   each of at most 8 paged lists in progress
    The default build's figures (sizeof) are these; a 32-bit build's are
    smaller.


    ERRORS
    ======
    Fallible functions return int: KCTL_OK (0) or a negative KCTL_ERR_* code
    (one list, KCTL_RESULTS); kctl_strerror() names each. What to do next:
        KCTL_ERR_INVALID_ARG   fix the call (NULL, empty or too long key, bad
                               desc), or the object a store refused
        KCTL_ERR_NOMEM         out of memory; the object is unchanged and usable
        KCTL_ERR_SHUTDOWN      the queue is shutting down: stop the worker
        KCTL_ERR_AGAIN         nothing ready now: try again later
        KCTL_ERR_CONFLICT      (stores) optimistic-concurrency loss: re-read, retry
        KCTL_ERR_GONE          (stores) version too old: list again
        KCTL_ERR_CLOSED        (stores) a watch ended cleanly: watch again, at once
    A store says more, as an API server does: every transport call takes a
    kctl_api_status (NULL: none wanted) that a failure fills with the HTTP
    code, the reason (NotFound, AlreadyExists, Conflict, Invalid,
    BadRequest, Expired...), a message for people and, for a refused
    object, each field at fault:
        kctl_api_status st = { 0 };
        if (kctl_memstore_apply(ms, &res, doc, KCTL_NTS, NULL, &st) != KCTL_OK)
            fprintf(stderr, "%s\n", st.message);
        // apps.example.io "Web" is invalid: metadata.name: Invalid value:
        // "Web": a lowercase RFC 1123 subdomain must consist of lower case ...
        kctl_api_status_clear(&st);
    The memstore words every refusal as a real API server does (the
    API-SERVER RULES section); the remote transports hand on the server's.


    TEXT AND OBJECTS
    ================
    Wherever kctl takes a text and its length, the length may be KCTL_NTS
    for a NUL-terminated text: no counting by hand. Read an object's fields
    by path without token arrays (kctl_obj_get_string/int64/double/bool,
    "spec.ntp.servers[0]"; kctl_obj_iter_begin/kctl_json_iter_next over an
    array or a map); build documents with the writer (kctl_jw_*), which
    escapes strings and checks the nesting:
        char buf[256]; const char *status; kctl_jw w;
        kctl_jw_init(&w, buf, sizeof buf);
        kctl_jw_object_begin(&w);
        kctl_jw_key(&w, "phase"); kctl_jw_string(&w, "Ready");
        kctl_jw_object_end(&w);
        if (kctl_jw_finish(&w, &status, NULL) == KCTL_OK)
            kctl_status_update(&ctx->transport, &res, ctx->obj, status, KCTL_NTS, NULL, NULL, NULL);


    LOGGING
    =======
    Silent without a logger. A kctl_logger receives a level, a numeric item id
    (KCTL_LOGITEM_*, from one X-macro list) and, unless KCTL_NO_LOG_STRINGS, a
    message. Assert on ids, never on strings.


    WRITING A TRANSPORT
    ===================
    A store is a kctl_transport: a vtable (kctl_transport_vtable) and a
    self pointer; callers use it through kctl_transport_get, _create, ...
    The comment above kctl_resource is the porting guide: what each entry
    does, which codes mean what (GONE: list again; CONFLICT: re-read and
    retry; IO: watch again from the last version), and the rules every
    entry keeps (thread-safe, references handed out, a kctl_api_status
    filled on failure). A store that keeps objects itself decides its
    writes with kctl_apisrv_decide (names, generation, status subresource,
    finalizers, no-op writes, refusals worded as an API server's); one that
    fronts a server parses the server's Status (kctl_api_status_parse).
    The memstore is the reference implementation; tests/contract.h is the
    contract suite every transport runs (memstore, the directory store of
    examples/dirstore.h, etcd), and its DIFFERENCES block is the one place
    where what a transport does otherwise is written down.


    LIMITS
    ======
    - Keys are non-empty NUL-terminated strings of at most KCTL_MAX_KEY_LEN
      bytes (4096 by default).
    - Times are uint64_t nanoseconds; additions saturate at UINT64_MAX
      (about 584 years), so no delay overflows.
    - Failure counts saturate at UINT32_MAX.
    - Budgets (max_keys, max_objects, max_bytes, history) are what a
      container holds; see MEMORY for the bytes they come to.
    - JSON documents: nesting depth 64 and size 64 MiB by default
      (kctl_json_limits; depth at most 1024, size below 4 GiB); a path's
      bracket-quoted member name at most 1024 bytes.
    - Numbers compare exactly however written; kctl_json_double rounds as
      strtod does in the "C" locale (kctl's own, whatever the locale).


    VERSION HISTORY
    ===============
    0.1.0  foundation (result codes, allocator, logger, clock, virtual clock,
           platform layer) and the work queue with its rate limiters.
    0.2.0  JSON reader/writer and merge patch, objects, selectors,
           indexer, delta FIFO, transport interface, memstore with
           watches, faults and persistence.
    0.3.0  reflector, informer, predicates, the status helper and retry
           on conflict, the controller, leader election, the manager
           (shared informers, run until a signal, leader election,
           Prometheus metrics).
    0.4.0  (in progress) core fixes before the remote transports: result
           codes from one list; KCTL_NTS for NUL-terminated text; the
           implementation asks for POSIX itself; the transport's Status
           detail, wrappers and merge-patch entry; the API-SERVER RULES
           (validation in apimachinery's words, generation on deletion,
           no new finalizers while deleting); selectors as labels.Parse;
           syncs only to handlers that ask; owners by group and kind;
           getters by path; no quadratic JSON paths; a memstore that
           acknowledges only durable writes; leader election shares a
           Lease with client-go (MicroTime times from the elector's clock,
           the holder's lease duration, jitter, release, other fields kept;
           an unreadable Lease is never free); the manager's metrics pass
           promtool, its lists grow, release_on_stop,
           kctl_manager_run_until_signal and cache_sync_timeout_ns.
           Queue options: pending_after (what a plain add does to a
           pending add_after, kubernetes#112325) and priority with aging
           (kctl_queue_add_low; a controller queues list and resync
           events low, kctl_informer_event_from_list).
           Firmware: the port layer (KCTL_PORT_*, KCTL_PORT_CUSTOM),
           kctl_manager_step and kctl_controller_poll with exact
           deadlines and watch_notify wake-ups (the memstore, etcd and
           Kubernetes transports), memory budgets (max_keys, max_objects,
           max_bytes, the history), the transform hook, the allocator
           hook everywhere, trim switches (KCTL_NO_MEMSTORE, _LEADER,
           _METRICS, _FLOAT, _JSON_DOUBLE, _SELECTORS, _CHECKPOINT,
           _MERGE_PATCH) and the implementation's own formatting.
           Edge autonomy: the memstore's journal (group commit,
           snapshots, recovery up to the first torn record, kctl_fs,
           kctl_memstore_flush), informer checkpoints, offline mode,
           jittered backoff and relists, hold_backoff, the write budget,
           the hot-loop detector, a relist when the store went back,
           reported state. Speed: kctl_indexer_read, bounded adaptive
           spinning, one lock trip per key for a controller's worker.
*/
/* The implementation needs POSIX (clock_gettime, pthreads, fsync), which
   strict -std=c99 hides, unless it brings its own port and has no files
   (KCTL_PORT_CUSTOM with KCTL_NO_FILES: a bare-metal or RTOS build). Where this file comes before any system header
   of the file that defines KCTL_IMPLEMENTATION, it asks for POSIX itself;
   otherwise the implementation stops with an #error naming the fix. */
#if defined(KCTL_IMPLEMENTATION) && !defined(KCTL_IMPLEMENTATION_DONE) && !defined(_POSIX_C_SOURCE) && \
    !(defined(KCTL_PORT_CUSTOM) && defined(KCTL_NO_FILES)) && !defined(_XOPEN_SOURCE) && !defined(_GNU_SOURCE) && !defined(_DEFAULT_SOURCE) && !defined(_BSD_SOURCE)
#  if defined(_FEATURES_H) || defined(_SYS_FEATURES_H) /* glibc, musl; newlib: a system header came first */
#    error "kctl.h: the implementation needs POSIX, hidden by strict -std=c99: include kctl.h before any system header in the file that defines KCTL_IMPLEMENTATION, or compile with -D_POSIX_C_SOURCE=200809L"
#  endif
#  define _POSIX_C_SOURCE 200809L
#endif

#ifndef KCTL_H_INCLUDED
#define KCTL_H_INCLUDED

#include <stddef.h>
#include <stdint.h>
#include <stdbool.h>

#define KCTL_VERSION_MAJOR 0
#define KCTL_VERSION_MINOR 4
#define KCTL_VERSION_PATCH 0
#define KCTL_VERSION_STRING "0.4.0" /* the label on line 1 and the last VERSION HISTORY entry say the same */
#define KCTL_VERSION_NUMBER (KCTL_VERSION_MAJOR * 10000 + KCTL_VERSION_MINOR * 100 + KCTL_VERSION_PATCH)

#ifndef KCTL_API
#  ifdef KCTL_STATIC
#    if defined(__GNUC__) || defined(__clang__)
#      define KCTL_API static __attribute__((unused))
#    else
#      define KCTL_API static
#    endif
#  else
#    define KCTL_API extern
#  endif
#endif

#ifdef __cplusplus
extern "C" {
#endif

/* ====================================================== >>version VERSION */

/* The library's version as "MAJOR.MINOR.PATCH". [any thread] */
KCTL_API const char *kctl_version(void);

/* ================================================= >>results RESULT CODES */

/* Every fallible function returns KCTL_OK or one of these. Bands: -1..-9
   generic, -10..-19 state, -20..-29 peer and transport. One list, expanded
   into the enum, kctl_strerror and the metrics' code labels: a code added
   here is named everywhere. X(NAME, value, description, what to do). */
#define KCTL_RESULTS(X) \
    X(OK,               0,   "ok", "") \
    X(ERR_INVALID_ARG,  -1,  "invalid argument", "a bad argument or document: fix the call") \
    X(ERR_NOMEM,        -2,  "out of memory", "nothing was changed") \
    X(ERR_TOO_LARGE,    -3,  "too large", "input beyond a documented limit") \
    X(ERR_FULL,         -4,  "full", "a bounded container is full") \
    X(ERR_UNSUPPORTED,  -5,  "unsupported in this build", "compiled out by a KCTL_NO_* switch: build without it") \
    X(ERR_NOT_FOUND,    -10, "not found", "no such key or object (HTTP 404)") \
    X(ERR_EXISTS,       -11, "already exists", "HTTP 409 on create") \
    X(ERR_CONFLICT,     -12, "conflict: stale resourceVersion", "HTTP 409: re-read, retry") \
    X(ERR_GONE,         -13, "gone: version too old, list again", "HTTP 410: list again") \
    X(ERR_SHUTDOWN,     -14, "shutting down", "the object is shutting down") \
    X(ERR_AGAIN,        -15, "try again", "nothing ready now: try again later") \
    X(ERR_CLOSED,       -16, "stream ended", "a watch ended cleanly (the server's timeout): watch again from the last version, at once") \
    X(ERR_TIMEOUT,      -20, "timed out", "a deadline passed") \
    X(ERR_IO,           -21, "i/o error", "the connection, stream or file failed") \
    X(ERR_PROTO,        -22, "protocol error: malformed input", "malformed input from a peer") \
    X(ERR_UNAUTHORIZED, -23, "unauthorized", "bad or missing credentials (HTTP 401)") \
    X(ERR_FORBIDDEN,    -24, "forbidden", "not allowed (HTTP 403)")

#define KCTL__RESULT_ENUM(id, v, msg, next) KCTL_##id = v,
typedef enum kctl_result { KCTL_RESULTS(KCTL__RESULT_ENUM) KCTL__RESULT_END_ = 1 } kctl_result;
#undef KCTL__RESULT_ENUM

/* A short constant description of a result code ("unknown error" for codes
   kctl does not define). Never NULL. [any thread] */
KCTL_API const char *kctl_strerror(int code);

/* ====================================================== >>alloc ALLOCATOR */

/* Memory hooks. Both functions or neither; all zero = KCTL_MALLOC/KCTL_FREE. */
typedef struct kctl_allocator {
    void *(*alloc_fn)(size_t size, void *user_data);
    void  (*free_fn)(void *ptr, void *user_data);
    void  *user_data;
} kctl_allocator;

/* ========================================================== >>log LOGGING */

typedef enum kctl_log_level {
    KCTL_LOG_ERROR = 0,
    KCTL_LOG_WARN  = 1,
    KCTL_LOG_INFO  = 2,
    KCTL_LOG_DEBUG = 3
} kctl_log_level;

/* Every log item kctl emits: id, then default message. */
#define KCTL_LOG_ITEMS(X) \
    X(OK, "no error") \
    X(QUEUE_DONE_NOT_PROCESSING, "kctl_queue_done: key is not being processed; ignored") \
    X(QUEUE_NOMEM, "kctl_queue: out of memory; the key was not queued") \
    X(QUEUE_FULL, "kctl_queue: max_keys reached; a new key was refused (FULL)") \
    X(QUEUE_LIMITER_FAILED, "kctl_queue_create: could not create the default limiter") \
    X(CONTROLLER_REQUEUE_AFTER_WITH_ERROR, "reconcile returned an error and a requeue-after: the error wins (backoff)") \
    X(CONTROLLER_ENQUEUE_FAILED, "controller: a key could not be queued") \
    X(CONTROLLER_STOP_TIMEOUT, "controller stop: reconciles still running at the end of the grace period") \
    X(MANAGER_LOST_LEASE, "manager: lost the leader lease; controllers stopped") \
    X(MANAGER_RELEASE_FAILED, "manager stop: could not release the leader lease; it expires instead") \
    X(CONTROLLER_OFFLINE, "controller: the store is unreachable: keys that need it are parked, one probes") \
    X(CONTROLLER_ONLINE, "controller: the store is back: parked keys are released through the ramp") \
    X(CONTROLLER_HOT_LOOP, "controller: a key reconciles again and again with no new spec: slowed") \
    X(MEMSTORE_JOURNAL_TORN, "memstore: the journal ends in a torn record (a crash while it was written); it is cut off, everything before kept") \
    X(MEMSTORE_JOURNAL_CORRUPT, "memstore: a journal record is corrupt (length, checksum, order or content); it and all after are dropped, everything before kept") \
    X(MEMSTORE_JOURNAL_SYNC_FAILED, "memstore: the journal could not be synced; writes are refused until a snapshot succeeds") \
    X(MEMSTORE_COMPACT_FAILED, "memstore: the journal could not be folded into a snapshot; it is tried again later") \
    X(CHECKPOINT_CORRUPT, "checkpoint discarded: bad magic, truncated, bad checksum or malformed content") \
    X(CHECKPOINT_OLD_FORMAT, "checkpoint discarded: a format version this kctl does not read") \
    X(CHECKPOINT_MISMATCH, "checkpoint discarded: it is of another resource or selector") \
    X(CHECKPOINT_READ_FAILED, "checkpoint: the file is there but cannot be read; listing instead") \
    X(CHECKPOINT_SAVE_FAILED, "checkpoint: a write failed; the previous checkpoint stays") \
    X(REPORTED_CONFLICT_RETRIES, "reported state: the write kept conflicting; backing off") \
    X(MEMSTORE_FULL, "memstore: max_objects or max_bytes reached; a write was refused (FULL)") \
    X(INFORMER_CACHE_FULL, "informer: the cache is full (max_objects or max_bytes); an object was not cached, a relist retries it") \
    X(INFORMER_TRANSFORM_FAILED, "informer: the transform refused an object; it was not cached") \
    X(REFLECTOR_STORE_BEHIND, "reflector: the store is older than the last version seen (restored from an older snapshot, or restarted without its history); listing again after a backoff")

#define KCTL__LOGITEM_ENUM(id, msg) KCTL_LOGITEM_##id,
typedef enum kctl_log_item { KCTL_LOG_ITEMS(KCTL__LOGITEM_ENUM) KCTL_LOGITEM_COUNT } kctl_log_item;
#undef KCTL__LOGITEM_ENUM

/* A log sink. message is NULL under KCTL_NO_LOG_STRINGS. May be called from
   any thread that uses the logging object; must not call back into it. */
typedef struct kctl_logger {
    void (*func)(int level, uint32_t item_id, const char *message, void *user_data);
    void *user_data;
} kctl_logger;

/* ========================================================== >>clock CLOCK */

#define KCTL_MS(x)  ((uint64_t)(x) * UINT64_C(1000000))
#define KCTL_SEC(x) ((uint64_t)(x) * UINT64_C(1000000000))

/* A waiter registered with a clock that does not follow real time: the clock
   calls wake(arg) whenever its time moves. The clock owns next/prev while the
   waiter is subscribed. */
typedef struct kctl_clock_waiter {
    void (*wake)(void *arg);
    void *arg;
    struct kctl_clock_waiter *next, *prev;
} kctl_clock_waiter;

/* A clock: nanoseconds from an arbitrary origin, never going back.
   All zero = the monotonic clock. A clock whose time moves at the rate of
   real time leaves subscribe_fn/unsubscribe_fn NULL and kctl waits on it
   with timed waits; a clock that moves by other means (a virtual clock) sets
   both, and kctl waits untimed until the clock calls a waiter's wake. */
typedef struct kctl_clock {
    uint64_t (*now_fn)(void *user_data);
    void (*subscribe_fn)(kctl_clock_waiter *w, void *user_data);
    void (*unsubscribe_fn)(kctl_clock_waiter *w, void *user_data);
    void *user_data;
} kctl_clock;

/* The system's monotonic clock (the port's KCTL_PORT_NOW_NS; POSIX:
   CLOCK_MONOTONIC). [any thread] */
KCTL_API kctl_clock kctl_clock_monotonic(void);
/* The time of a clock; NULL or all-zero = the monotonic clock. [any thread] */
KCTL_API uint64_t kctl_clock_now(const kctl_clock *c);

/* A virtual clock for tests and simulations: time moves only through
   kctl_vclock_advance. Caller-allocated; treat the members as private. */
typedef struct kctl_vclock {
    uint64_t now_ns;
    kctl_clock_waiter *waiters;
    union { unsigned char bytes[256]; uint64_t u; void *p; double d; } lock_;
} kctl_vclock;

/* Set up a virtual clock at start_ns. [not thread-safe] */
KCTL_API void kctl_vclock_init(kctl_vclock *vc, uint64_t start_ns);
/* Release what init set up; no clock made from it may be in use. [not thread-safe] */
KCTL_API void kctl_vclock_deinit(kctl_vclock *vc);
/* A kctl_clock reading vc; vc must outlive every user of the clock. [any thread] */
KCTL_API kctl_clock kctl_vclock_clock(kctl_vclock *vc);
/* Move time forward by delta_ns (saturating) and wake every waiter, e.g.
   workers blocked in kctl_queue_get whose delayed keys are now ready. [any thread] */
KCTL_API void kctl_vclock_advance(kctl_vclock *vc, uint64_t delta_ns);

/* Text arguments: wherever kctl takes a text and its length (a JSON
   document, a patch, a status), the length may be KCTL_NTS: the text is
   NUL-terminated and kctl counts it, so a literal needs no counting:
       kctl_status_update(&t, &res, obj, "{\"phase\":\"Ready\"}", KCTL_NTS, NULL, NULL, NULL);
   (ODBC's SQL_NTS.) Any other length is exact: the text needs no NUL. */
#define KCTL_NTS ((size_t)-1)

/* ============================================================ >>json JSON */
/* A strict RFC 8259 reader that tokenizes a document in place, into token
   storage the caller provides (a counting mode sizes it), and never
   allocates; lookups by path; typed getters; semantic equality; a small
   writer; JSON merge patch (RFC 7386); and getters by path straight over
   the text, with no token storage at all (kctl_json_get_*, below).

   Cost: everything is O(n log n) or better in the document's size, on
   any input. Objects of up to 16 members (most) are handled by scanning,
   without memory; equality and merge patch sort the names of bigger ones
   (equality: memory from KCTL_MALLOC, and without it a slower scan that
   gives the same answer; merge patch: the writer's allocator, NOMEM).

   Limits (configurable per call through kctl_json_limits; zero = these):
   nesting depth KCTL_JSON_MAX_DEPTH (64) and document size
   KCTL_JSON_MAX_BYTES (64 MiB); beyond either, KCTL_ERR_TOO_LARGE. An
   invalid document is KCTL_ERR_PROTO. Member names may repeat (RFC 8259
   allows it); a lookup finds the last, as Go's encoding/json does. */
#define KCTL_JSON_MAX_DEPTH 64
#define KCTL_JSON_MAX_BYTES (64u * 1024u * 1024u)
#define KCTL_JSON_NONE UINT32_MAX /* "no such value" from the lookups */

typedef enum kctl_json_type {
    KCTL_JSON_INVALID = 0, /* KCTL_JSON_NONE, or out of range */
    KCTL_JSON_OBJECT,
    KCTL_JSON_ARRAY,
    KCTL_JSON_STRING,
    KCTL_JSON_NUMBER,
    KCTL_JSON_TRUE,
    KCTL_JSON_FALSE,
    KCTL_JSON_NULL
} kctl_json_type;

/* One value of a document, in document order. An object's members follow
   it as name (a STRING token), value, name, value, ...; an array's elements
   follow it. Values are addressed by their token index (the root is 0). */
typedef struct kctl_json_tok {
    uint8_t type;       /* kctl_json_type */
    uint8_t escaped;    /* STRING: has backslash escapes (read it with kctl_json_string) */
    uint16_t reserved_;
    uint32_t start;     /* first byte of the value; STRING: after the opening quote */
    uint32_t end;       /* one past the last byte; STRING: the closing quote */
    uint32_t size;      /* OBJECT: members; ARRAY: elements; else 0 */
    uint32_t skip;      /* tokens in this value with its children: the next sibling is at index + skip */
} kctl_json_tok;

typedef struct kctl_json_limits {
    uint32_t max_depth; /* 0 = KCTL_JSON_MAX_DEPTH */
    uint32_t max_bytes; /* 0 = KCTL_JSON_MAX_BYTES */
} kctl_json_limits;

/* A parsed document: a view of the caller's text and tokens (both must
   outlive it). */
typedef struct kctl_json {
    const char *text;
    size_t len;
    const kctl_json_tok *toks;
    uint32_t ntoks;
} kctl_json;

/* Parse text[0..len) (no NUL needed) into toks[0..cap). toks NULL: only
   validate and count, *out->ntoks = the tokens needed. Returns OK, PROTO
   (invalid: garbage, trailing data, bad escapes or UTF-8, lone
   surrogates), TOO_LARGE (limits), FULL (cap too small; out->ntoks then
   says how many are needed), INVALID_ARG (NULL text or out). limits may be
   NULL. [any thread] */
KCTL_API int kctl_json_parse(const char *text, size_t len, kctl_json_tok *toks, uint32_t cap,
                             const kctl_json_limits *limits, kctl_json *out);
/* The type of value v (KCTL_JSON_INVALID for KCTL_JSON_NONE). [any thread] */
KCTL_API kctl_json_type kctl_json_type_of(const kctl_json *j, uint32_t v);
/* The value of member name (NUL-terminated, compared with the unescaped
   member names) of object obj, or KCTL_JSON_NONE. [any thread] */
KCTL_API uint32_t kctl_json_member(const kctl_json *j, uint32_t obj, const char *name);
/* Element i of array arr, or KCTL_JSON_NONE. [any thread] */
KCTL_API uint32_t kctl_json_element(const kctl_json *j, uint32_t arr, uint32_t i);
/* Follow a path from value from: members separated by dots, array indices
   in brackets, and members whose names hold dots or brackets quoted in
   brackets: "spec.replicas", "items[2].metadata.name",
   "metadata.labels[\"app.kubernetes.io/name\"]". "" is from itself.
   KCTL_JSON_NONE when the path is malformed or leads nowhere. [any thread] */
KCTL_API uint32_t kctl_json_path(const kctl_json *j, uint32_t from, const char *path);
/* The string at v, unescaped (UTF-8) into buf[0..cap) and NUL-terminated;
   *len (may be NULL) gets its length. INVALID_ARG if v is not a string,
   TOO_LARGE if cap <= length (*len still says the length). [any thread] */
KCTL_API int kctl_json_string(const kctl_json *j, uint32_t v, char *buf, size_t cap, size_t *len);
/* Whether the string at v equals s (NUL-terminated) once unescaped. [any thread] */
KCTL_API bool kctl_json_string_eq(const kctl_json *j, uint32_t v, const char *s);
/* The integer at v, exactly: a number without fraction or exponent, or a
   string holding one (etcd writes int64 as strings). INVALID_ARG if v is
   neither, TOO_LARGE if out of range. [any thread] */
KCTL_API int kctl_json_int64(const kctl_json *j, uint32_t v, int64_t *out);
KCTL_API int kctl_json_uint64(const kctl_json *j, uint32_t v, uint64_t *out);
/* The number at v as a double (nearest). INVALID_ARG if not a number. [any thread] */
KCTL_API int kctl_json_double(const kctl_json *j, uint32_t v, double *out);
/* true/false at v. INVALID_ARG if v is neither. [any thread] */
KCTL_API int kctl_json_bool(const kctl_json *j, uint32_t v, bool *out);
/* The text of value v as it stands in the document (a string with its
   quotes). INVALID_ARG for KCTL_JSON_NONE. [any thread] */
KCTL_API int kctl_json_raw(const kctl_json *j, uint32_t v, const char **text, size_t *len);
/* Semantic equality: objects equal whatever their member order (names
   unescaped; the last of repeated names counts), arrays element by
   element, strings once unescaped, numbers by exact decimal value
   (1, 1.0 and 1e0 are equal; 2^63 and 2^63+1 are not). Either value
   KCTL_JSON_NONE: equal only if both are. O(n log n): objects of more
   than 16 members are compared through their sorted names, in memory
   from KCTL_MALLOC (12 bytes a member, freed before it returns); if that
   fails, by scanning (quadratic, the same answer). [any thread] */
KCTL_API bool kctl_json_equal(const kctl_json *a, uint32_t va, const kctl_json *b, uint32_t vb);
/* The same with that memory from allocator (NULL or zero: KCTL_MALLOC /
   KCTL_FREE), for a program whose every allocation goes through its
   hooks. [any thread] */
KCTL_API bool kctl_json_equal_with(const kctl_json *a, uint32_t va, const kctl_json *b, uint32_t vb,
                                   const kctl_allocator *allocator);

/* A JSON writer into a caller's buffer (fixed) or a growing one. Errors
   stick: after the first, calls do nothing and kctl_jw_finish reports it
   (FULL: the fixed buffer is too small; NOMEM; INVALID_ARG: misuse, such
   as a value where a member name is due, or unbalanced ends). Nesting is
   limited to KCTL_JSON_MAX_DEPTH. Numbers: integers exactly; doubles in the
   shortest form that reads back the same; NaN and infinities are
   INVALID_ARG. Strings are escaped as RFC 8259 requires. [not thread-safe] */
typedef struct kctl_jw {
    char *buf;
    size_t len, cap;
    kctl_allocator allocator;
    bool growable;
    int err;
    uint32_t depth;
    uint8_t state[KCTL_JSON_MAX_DEPTH + 1]; /* per level: what comes next */
} kctl_jw;

/* Write into buf[0..cap) (the text is NUL-terminated when it fits). */
KCTL_API void kctl_jw_init(kctl_jw *w, char *buf, size_t cap);
/* Write into a buffer that grows (allocator may be NULL); kctl_jw_free it. */
KCTL_API void kctl_jw_init_growable(kctl_jw *w, const kctl_allocator *allocator);
/* Free a growable writer's buffer. */
KCTL_API void kctl_jw_free(kctl_jw *w);
KCTL_API void kctl_jw_object_begin(kctl_jw *w);
KCTL_API void kctl_jw_object_end(kctl_jw *w);
KCTL_API void kctl_jw_array_begin(kctl_jw *w);
KCTL_API void kctl_jw_array_end(kctl_jw *w);
/* A member name, inside an object; the value follows. */
KCTL_API void kctl_jw_key(kctl_jw *w, const char *name);
KCTL_API void kctl_jw_string(kctl_jw *w, const char *s);
KCTL_API void kctl_jw_string_n(kctl_jw *w, const char *s, size_t n);
KCTL_API void kctl_jw_int64(kctl_jw *w, int64_t v);
KCTL_API void kctl_jw_uint64(kctl_jw *w, uint64_t v);
KCTL_API void kctl_jw_double(kctl_jw *w, double v);
KCTL_API void kctl_jw_bool(kctl_jw *w, bool v);
KCTL_API void kctl_jw_null(kctl_jw *w);
/* A value given as JSON text, copied as is (the caller vouches for it:
   use kctl_jw_value to copy a parsed value). */
KCTL_API void kctl_jw_raw(kctl_jw *w, const char *json, size_t n);
/* Copy value v of a parsed document. */
KCTL_API void kctl_jw_value(kctl_jw *w, const kctl_json *j, uint32_t v);
/* The document written so far (complete: every begin ended); *text stays
   valid until the writer is written to or freed. Returns the sticky error,
   or INVALID_ARG if the document is not complete. */
KCTL_API int kctl_jw_finish(kctl_jw *w, const char **text, size_t *len);

/* RFC 7386: write to out the result of applying merge patch `patch` (value
   vp) to document `doc` (value vd; KCTL_JSON_NONE for no document). The
   document's members keep their order, new ones follow in the patch's;
   a repeated name counts once, its last value. Returns out's error, if
   any (NOMEM also when sorting the names of an object of more than 16
   members needs memory: it comes from out's allocator). [any thread,
   given its own writer] */
KCTL_API int kctl_json_merge_patch(const kctl_json *doc, uint32_t vd, const kctl_json *patch, uint32_t vp, kctl_jw *out);

/* Reading without tokens. A kctl_json_value is a view of one value in a
   document's text: where it starts, its length, its type. The getters
   below walk a path straight over the text, tokenizing nothing and
   allocating nothing, in O(the bytes up to the value's end). Paths are
   kctl_json_path's: members separated by dots, indices in brackets,
   names with dots or brackets quoted in brackets ("spec.replicas",
   "items[2].metadata.name", "metadata.labels[\"app.kubernetes.io/name\"]");
   "" or NULL is the value itself; of repeated member names the last
   counts. They find what kctl_json_path finds and read it as the token
   getters do, with the same results:
     OK           found, and of the type asked for;
     NOT_FOUND    nothing at the path: a member absent, an index past the
                  end, a step into a scalar;
     INVALID_ARG  the value there has another type (null is a value: a
                  typed getter refuses it), a malformed path, NULL arguments;
     TOO_LARGE    an integer out of range; a string of cap bytes or more
                  (*len still says its length; buf gets "");
     PROTO        kctl_json_get_* only: the text is not valid JSON.
   kctl_json_get_* validate their text (kctl_json_parse's default limits;
   beyond them TOO_LARGE) on every call; len may be KCTL_NTS. To read text
   several times, validate it once with kctl_json_get(text, len, "", &root)
   and read from root with kctl_json_value_get_*. A value from an object, a
   getter or an iterator is valid as long as the text it views; a view
   made by hand must view valid JSON (kctl never reads outside it, but
   may answer PROTO or read nonsense). [any thread] */
typedef struct kctl_json_value {
    const char *text; /* the value as written: a string with its quotes */
    size_t len;
    kctl_json_type type;
} kctl_json_value;

KCTL_API int kctl_json_get(const char *text, size_t len, const char *path, kctl_json_value *out);
KCTL_API int kctl_json_get_string(const char *text, size_t len, const char *path, char *buf, size_t cap, size_t *slen);
KCTL_API int kctl_json_get_int64(const char *text, size_t len, const char *path, int64_t *out);
KCTL_API int kctl_json_get_uint64(const char *text, size_t len, const char *path, uint64_t *out);
KCTL_API int kctl_json_get_double(const char *text, size_t len, const char *path, double *out);
KCTL_API int kctl_json_get_bool(const char *text, size_t len, const char *path, bool *out);
/* The same, from a value (its text is not validated again). Strings are
   unescaped into buf[0..cap) and NUL-terminated; integers are exact (a
   number without fraction or exponent, or a string holding one, as
   kctl_json_int64 reads them); doubles the nearest. */
KCTL_API int kctl_json_value_get(const kctl_json_value *from, const char *path, kctl_json_value *out);
KCTL_API int kctl_json_value_get_string(const kctl_json_value *from, const char *path, char *buf, size_t cap, size_t *len);
KCTL_API int kctl_json_value_get_int64(const kctl_json_value *from, const char *path, int64_t *out);
KCTL_API int kctl_json_value_get_uint64(const kctl_json_value *from, const char *path, uint64_t *out);
KCTL_API int kctl_json_value_get_double(const kctl_json_value *from, const char *path, double *out);
KCTL_API int kctl_json_value_get_bool(const kctl_json_value *from, const char *path, bool *out);

/* Iteration over the elements of an array or the members of an object, in
   document order: O(n) in all, no allocation. A member whose name repeats
   comes once per occurrence, as written (a lookup counts the last, and so
   does a map filled in this order). The iterator is the caller's, its
   fields private. [not thread-safe: one iterator, one thread at a time] */
typedef struct kctl_json_iter {
    const char *text_;
    uint32_t pos_, len_;
    uint8_t type_;
} kctl_json_iter;

/* Start at the array or object at path from `from`. OK; NOT_FOUND;
   INVALID_ARG (not an array or object, a malformed path, NULL arguments).
   After an error, *it is empty (next returns false). [any thread] */
KCTL_API int kctl_json_iter_begin(const kctl_json_value *from, const char *path, kctl_json_iter *it);
/* The next element or member: *value (may be NULL) gets it; *name (may be
   NULL) gets a member's name, a STRING value (read it with
   kctl_json_value_get_string), or for an element {NULL, 0, INVALID}.
   false at the end. [not thread-safe] */
KCTL_API bool kctl_json_iter_next(kctl_json_iter *it, kctl_json_value *name, kctl_json_value *value);

#ifdef KCTL__WORK_COUNTER
/* kctl's own tests only: the member-name comparisons the JSON and object
   code have made so far, a measure of work tests bound instead of time. */
KCTL_API uint64_t kctl__json_work(void);
/* kctl's own tests only: kctl's snprintf (kctl__fmt), to compare with libc's. */
KCTL_API int kctl__test_fmt(char *buf, size_t cap, const char *fmt, ...);
/* kctl's own tests only: kctl's string functions of -Os builds, to compare
   with libc's: fn 0 strcmp(a, b), 1 strncmp(a, b, n), 2 strlen(a), 3
   strchr(a, (char)n) as an offset or -1, 4 memmove(a, b, n) (a writable). */
KCTL_API int kctl__test_own_str(int fn, const char *a, const char *b, size_t n);
/* kctl's own tests only: the 64-bit division of -Os builds on 32-bit
   targets (n / d, n % d in *rem), to compare with the compiler's. */
KCTL_API uint64_t kctl__test_own_udiv64(uint64_t n, uint64_t d, uint64_t *rem);
/* kctl's own tests only: us (since 1970) as RFC 3339, as kctl writes
   times (micro: six fractional digits). */
KCTL_API void kctl__test_time_format(int64_t us, bool micro, char buf[32]);
/* kctl's own tests only: steps random inserts and deletes (seed) of nkeys
   keys on the key map, their hashes masked with hash_mask (few bits: long
   probe runs, distances past 255), checking after every step that each
   key is found exactly while present and the table's invariants hold.
   0 when all held, else the step that broke them (1-based); -1 NOMEM. */
KCTL_API long kctl__test_map_churn(uint32_t seed, uint32_t nkeys, uint32_t steps, uint32_t hash_mask);
/* kctl's own tests only: the key map's hash of s[0..n), as this build
   makes it (small builds hash otherwise). */
KCTL_API uint32_t kctl__test_hash(const char *s, size_t n);
/* kctl's own tests only: the key map's comparison of a[0..n) with b[0..n). */
KCTL_API bool kctl__test_key_eq(const char *a, const char *b, size_t n);
#endif
#if defined(KCTL__SPIN_TEST) && !defined(KCTL_NO_THREADS) && (defined(__GNUC__) || defined(__clang__))
/* kctl's own tests only: the spin policy (PLATFORM) on a script, and its
   time bound on the caller's clock. */
KCTL_API void kctl__spin_script(int cpus, const char *paid, char *decided);
KCTL_API void kctl__spin_widen_script(const uint64_t *masks, size_t n, char *on);
KCTL_API bool kctl__spin_until_test(const unsigned *word, unsigned seen, uint64_t budget_ns, uint64_t (*now_fn)(void *),
                                    void *ud);
#endif

/* ========================================================== >>obj OBJECTS */
/* An object: a JSON document with Kubernetes metadata, parsed once,
   immutable, reference-counted. Every stage (store, FIFO, cache, handlers,
   reconcilers) shares one copy; changing an object means making a new one.
   The metadata is read on the way in and kept unescaped, so accessors are
   O(1) (labels, annotations, finalizers and owner references are arrays;
   a lookup by name scans up to 16 of them, and binary-searches a sorted
   index past that). A user codec may decode the document once more into
   a value of its own, kept with the object and released with it.

   The rest of the document is read by path with typed getters: no token
   storage, no allocation, the same paths as kctl_json_path (see
   kctl_json_value for the syntax and the codes: an absent field is
   NOT_FOUND, one of another type INVALID_ARG):

       int64_t replicas = 1;                           // the default
       char server[256];
       kctl_json_iter it;
       kctl_json_value name, v;
       int rc = kctl_obj_get_int64(obj, "spec.replicas", &replicas);
       if (rc != KCTL_OK && rc != KCTL_ERR_NOT_FOUND) return rc;
       kctl_obj_iter_begin(obj, "spec.ntp.servers", &it);  // an array
       while (kctl_json_iter_next(&it, NULL, &v))
           if (kctl_json_value_get_string(&v, NULL, server, sizeof server, NULL) == KCTL_OK)
               use_server(server);                     // yours
       kctl_obj_iter_begin(obj, "spec.limits", &it);   // an object
       while (kctl_json_iter_next(&it, &name, &v))
           kctl_json_value_get_int64(&v, "max", &max); // a member of each
*/
typedef struct kctl_obj kctl_obj;

/* Decode obj's document into *decoded (kept with the object); a non-OK
   result rejects the document with that code. release frees it. */
typedef struct kctl_codec {
    int (*decode)(const kctl_obj *obj, void **decoded, void *user_data);
    void (*release)(void *decoded, void *user_data);
    void *user_data;
} kctl_codec;

/* How objects are made; zero means: KCTL_MALLOC/KCTL_FREE, no codec,
   the JSON reader's default limits (a codec: UNSUPPORTED under
   KCTL_NO_CODEC). */
typedef struct kctl_obj_opts {
    kctl_allocator allocator;
    kctl_codec codec;
    kctl_json_limits limits;
} kctl_obj_opts;

/* metadata.ownerReferences[i]. */
typedef struct kctl_owner_ref {
    const char *api_version, *kind, *name, *uid;
    bool controller;
} kctl_owner_ref;

/* Make an object of json[0..len) (copied). The document must be a JSON
   object whose metadata is an object with a non-empty string name; the
   metadata fields kctl reads must have their Kubernetes types. PROTO
   otherwise (or for invalid JSON), TOO_LARGE past the limits, NOMEM,
   INVALID_ARG for NULL arguments, or the codec's error. *out has one
   reference. [any thread] */
KCTL_API int kctl_obj_parse(const char *json, size_t len, const kctl_obj_opts *opts, kctl_obj **out);
/* Take one more reference (returns o). [any thread] */
KCTL_API kctl_obj *kctl_obj_ref(kctl_obj *o);
/* Drop a reference; the last one frees the object (NULL is fine). [any thread] */
KCTL_API void kctl_obj_unref(kctl_obj *o);
/* "namespace/name", or "name" for a cluster-scoped object. [any thread] */
KCTL_API const char *kctl_obj_key(const kctl_obj *o);
/* Split a key as client-go's SplitMetaNamespaceKey: "name" (no '/') is
   namespace "" and name; "namespace/name" splits at the '/'; more than one
   '/' is INVALID_ARG (so is a NULL key). Copies the parts, NUL-terminated,
   into ns[0..ns_cap) and name[0..name_cap) (either may be NULL with cap 0
   when not wanted): TOO_LARGE when one does not fit. On any error the
   buffers given hold "". [any thread] */
KCTL_API int kctl_key_split(const char *key, char *ns, size_t ns_cap, char *name, size_t name_cap);
/* metadata.namespace ("" when cluster-scoped), name, uid ("" if absent). [any thread] */
KCTL_API const char *kctl_obj_namespace(const kctl_obj *o);
KCTL_API const char *kctl_obj_name(const kctl_obj *o);
KCTL_API const char *kctl_obj_uid(const kctl_obj *o);
/* metadata.resourceVersion, an opaque string ("" if absent). [any thread] */
KCTL_API const char *kctl_obj_resource_version(const kctl_obj *o);
/* The resourceVersion as a number, when it is one (digits only, fits 64
   bits): true and *out; else false. [any thread] */
KCTL_API bool kctl_obj_resource_version_u64(const kctl_obj *o, uint64_t *out);
/* metadata.generation (0 if absent). [any thread] */
KCTL_API int64_t kctl_obj_generation(const kctl_obj *o);
/* metadata.deletionTimestamp, or NULL when the object is not being deleted. [any thread] */
KCTL_API const char *kctl_obj_deletion_timestamp(const kctl_obj *o);
/* A label's value, or NULL. Labels in document order: count and i-th. [any thread] */
KCTL_API const char *kctl_obj_label(const kctl_obj *o, const char *key);
KCTL_API size_t kctl_obj_label_count(const kctl_obj *o);
KCTL_API bool kctl_obj_label_at(const kctl_obj *o, size_t i, const char **key, const char **value);
/* An annotation's value, or NULL; annotations in document order. [any thread] */
KCTL_API const char *kctl_obj_annotation(const kctl_obj *o, const char *key);
KCTL_API size_t kctl_obj_annotation_count(const kctl_obj *o);
KCTL_API bool kctl_obj_annotation_at(const kctl_obj *o, size_t i, const char **key, const char **value);
/* Finalizers: count, i-th (NULL past the end), and whether one is present. [any thread] */
KCTL_API size_t kctl_obj_finalizer_count(const kctl_obj *o);
KCTL_API const char *kctl_obj_finalizer(const kctl_obj *o, size_t i);
KCTL_API bool kctl_obj_has_finalizer(const kctl_obj *o, const char *name);
/* Owner references: count, i-th (NULL past the end), and the one marked
   controller (NULL if none). [any thread] */
KCTL_API size_t kctl_obj_owner_count(const kctl_obj *o);
KCTL_API const kctl_owner_ref *kctl_obj_owner(const kctl_obj *o, size_t i);
KCTL_API const kctl_owner_ref *kctl_obj_controller_ref(const kctl_obj *o);
/* The document as received (NUL-terminated); *len may be NULL. [any thread] */
KCTL_API const char *kctl_obj_json(const kctl_obj *o, size_t *len);
/* What the codec decoded (NULL without a codec). [any thread] */
KCTL_API void *kctl_obj_decoded(const kctl_obj *o);
/* The value at path in the document ("" or NULL: the whole document), and
   typed reads of it; results as for kctl_json_value_get_* (OK, NOT_FOUND,
   INVALID_ARG, TOO_LARGE). The document was validated when the object was
   made: these walk its text without checking it again. A value stays
   valid while the caller holds its reference to o. [any thread] */
KCTL_API int kctl_obj_get(const kctl_obj *o, const char *path, kctl_json_value *out);
KCTL_API int kctl_obj_get_string(const kctl_obj *o, const char *path, char *buf, size_t cap, size_t *len);
KCTL_API int kctl_obj_get_int64(const kctl_obj *o, const char *path, int64_t *out);
KCTL_API int kctl_obj_get_uint64(const kctl_obj *o, const char *path, uint64_t *out);
KCTL_API int kctl_obj_get_double(const kctl_obj *o, const char *path, double *out);
KCTL_API int kctl_obj_get_bool(const kctl_obj *o, const char *path, bool *out);
/* Iterate the array or object at path (kctl_json_iter_begin's results);
   kctl_json_iter_next then walks it. [any thread; the iterator: not
   thread-safe] */
KCTL_API int kctl_obj_iter_begin(const kctl_obj *o, const char *path, kctl_json_iter *it);

/* =================================================== >>selector SELECTORS */
/* Label and field selectors, read as Kubernetes reads them (apimachinery's
   labels.Parse and fields.ParseSelector), so a cache holds only what a
   controller cares about. NULL or "" selects everything.

   Labels: requirements joined by ',', all of which must hold:
     key=value, key==value   the label is there with that value
     key!=value              another value, or no such label
     key in (a,b)            one of the values
     key notin (a,b)         none of them, or no such label
     key                     the label is there, with any value
     !key                    no such label
     key>5, key<5            the label is there and reads as a decimal
                             int64 (a sign allowed) above / below 5; any
                             other value does not match
   Whitespace (space, tab, CR, LF) may stand between any two tokens and
   must where two words meet ("x in (a)"); a selector of whitespace only
   selects everything. A word runs to whitespace or one of =!(),<> and
   must then be a valid key or value:
   - a key is [prefix/]name: the prefix a DNS-1123 subdomain (at most 253
     characters, dot-separated labels of [a-z0-9-] each starting and
     ending with a letter or digit), the name 1-63 characters of
     [A-Za-z0-9-_.] starting and ending with a letter or digit;
   - a value is such a name or empty: "x=" and "x==" ask for "";
   - in a set, a leading ',', ",," and a trailing ',' each stand for the
     value "" too: "x in ()", "x in (a,)", "x notin (,a)" and
     "x in (a,,b)" all hold "". Commas pair up as in labels.Parse, so a
     set ending in an even run of them is an error: "x in (a,,)",
     "x in (,,)";
   - the bound of > and < is one such value that is also an int64: digits
     only ("x>-1" and "x>+1" are errors, as values cannot start with a
     sign), leading zeros fine, at most 9223372036854775807;
   - "in" and "notin" are operators only after a key: "in in (notin)" is
     a key "in" with the value "notin".
   The same key may appear in several requirements; each must hold. A
   trailing or doubled ',', "!key" followed by anything but ',' or the
   end, ">=", "x in" without a set, and anything else labels.Parse
   rejects is KCTL_ERR_INVALID_ARG.

   Fields: "metadata.name=web,metadata.namespace!=kube-system"; =, == and
   != on metadata.name and metadata.namespace ("" for a cluster-scoped
   object). As fields.ParseSelector does, kctl splits terms at commas not
   escaped by '\', skips empty terms (a trailing ',' or "," alone is
   fine), splits a term at its first "!=", "==" or "=", and trims
   nothing: "metadata.name =web" names the field "metadata.name " and
   "metadata.name= web" asks for the name " web". In a value "\\", "\,"
   and "\=" stand for '\', ',' and '='; any other escape, a trailing '\'
   or a bare '=' ("metadata.name=a=b") is KCTL_ERR_INVALID_ARG.
   Where kctl differs: it knows no other field, so any other field name
   (which fields.ParseSelector takes, and the API server checks per
   resource) is KCTL_ERR_INVALID_ARG; and a value is compared byte for
   byte, where Go would turn invalid UTF-8 in an escaped value into
   U+FFFD. */
typedef struct kctl_selector kctl_selector;

/* Compile a label and a field selector (either may be NULL) into *out,
   one block the caller frees with kctl_selector_free; allocator may be
   NULL. INVALID_ARG for a malformed selector, a NULL out or an allocator
   with one hook of two (*out NULL, nothing allocated); NOMEM; UNSUPPORTED
   for any but an empty selector under KCTL_NO_SELECTORS. [any thread] */
KCTL_API int kctl_selector_parse(const char *labels, const char *fields, const kctl_allocator *allocator, kctl_selector **out);
/* Whether obj satisfies every requirement (a NULL selector: yes). [any thread] */
KCTL_API bool kctl_selector_matches(const kctl_selector *s, const kctl_obj *obj);
/* Free a selector (NULL is fine). [any thread] */
KCTL_API void kctl_selector_free(kctl_selector *s);

/* ====================================================== >>indexer INDEXER */
/* The local cache (client-go's Indexer): a thread-safe map key -> object
   plus named secondary indexes. An index function maps an object to zero
   or more values; by_index lists the objects under one value in time
   proportional to the hits. A "namespace" index is built in. The cache
   holds one reference per object; what it hands out are references of
   the caller's own. */
typedef struct kctl_indexer kctl_indexer;

/* Called by an index function once per value of obj (repeats are merged). */
typedef void (*kctl_index_emit)(const char *value, void *emit_ctx);
/* An index function: emit obj's values; a non-OK result fails the write.
   It must give the same values whenever it is called on the same object
   (objects are immutable, so a function of the object alone does): the
   cache stores no memberships and calls it again on the stored version to
   take that version out of its buckets, as client-go does. It runs under
   the cache's lock (and while a relist rebuilds the cache, with writers
   waiting on it) and must not call back into the cache. */
typedef int (*kctl_index_fn)(const kctl_obj *obj, kctl_index_emit emit, void *emit_ctx, void *user_data);

/* Objects handed out: count references, released by kctl_obj_list_free. */
typedef struct kctl_obj_list {
    kctl_obj **items;
    size_t count;
    kctl_allocator allocator;
} kctl_obj_list;
/* Strings handed out (keys, index values), freed by kctl_str_list_free. */
typedef struct kctl_str_list {
    char **items;
    size_t count;
    kctl_allocator allocator;
} kctl_str_list;
/* Unref every object and free the array (a zeroed list is fine). [any thread] */
KCTL_API void kctl_obj_list_free(kctl_obj_list *l);
/* Free the strings and the array (a zeroed list is fine). [any thread] */
KCTL_API void kctl_str_list_free(kctl_str_list *l);

/* Indexer options; zero = KCTL_MALLOC/KCTL_FREE and no bounds.
     max_objects  objects the cache holds at most (0: no bound)
     max_bytes    bytes of their JSON documents at most (0: no bound)
   An add of a new key past max_objects, or one that would take the
   documents past max_bytes, is FULL and leaves the cache unchanged (a
   replace of an object by a smaller or equal one always passes); a
   replace (relist) that would not fit is FULL as a whole. */
typedef struct kctl_indexer_desc {
    kctl_allocator allocator;
    uint32_t max_objects;
    size_t max_bytes;
} kctl_indexer_desc;

/* Create an empty cache with the "namespace" index; desc may be NULL. [any thread] */
KCTL_API int kctl_indexer_create(const kctl_indexer_desc *desc, kctl_indexer **out);
/* Free the cache and its references (NULL is fine). [not thread-safe] */
KCTL_API void kctl_indexer_destroy(kctl_indexer *ix);
/* Add an index (before or after data exists: existing objects are indexed
   now). EXISTS for a name in use; the fn's error; NOMEM; UNSUPPORTED under
   KCTL_NO_INDEXES. [any thread] */
KCTL_API int kctl_indexer_add_index(kctl_indexer *ix, const char *name, kctl_index_fn fn, void *user_data);
/* Store obj under its key, replacing any object there (add and update are
   the same operation, as in client-go); the cache takes its own
   reference. Indexes follow exactly. NOMEM, FULL (the desc's bounds) or an
   index fn's error leave the cache unchanged. [any thread] */
KCTL_API int kctl_indexer_add(kctl_indexer *ix, kctl_obj *obj);
KCTL_API int kctl_indexer_update(kctl_indexer *ix, kctl_obj *obj);
/* Remove key; NOT_FOUND if absent. [any thread] */
KCTL_API int kctl_indexer_delete(kctl_indexer *ix, const char *key);
/* The object at key (a new reference: unref it), or NULL. [any thread] */
KCTL_API kctl_obj *kctl_indexer_get(kctl_indexer *ix, const char *key);
/* Called by kctl_indexer_read with the object it found, borrowed: see there. */
typedef int (*kctl_obj_read_fn)(const kctl_obj *obj, void *user_data);
/* Look key up and call fn(obj, user_data) with the object borrowed, not
   referenced: client-go's GetByKey, which writes nothing (kctl_indexer_get
   writes the object's reference count twice a call, and two threads
   reading the same object trade its cache line). The lifetime rule: obj
   lives until fn returns, not a moment longer (the cache's read side is
   held across fn, so no writer can replace or drop it meanwhile); to keep
   it, take kctl_obj_ref(obj) inside fn. fn runs with the read side held:
   keep it short, and it must not call into this indexer (a writer waiting
   between two reads of one thread deadlocks them) nor block on a thread
   that does. Returns fn's result; NOT_FOUND (fn not called) when key is
   absent; INVALID_ARG for a NULL ix, key or fn. [any thread] */
KCTL_API int kctl_indexer_read(kctl_indexer *ix, const char *key, kctl_obj_read_fn fn, void *user_data);
/* How many objects. [any thread] */
KCTL_API size_t kctl_indexer_len(kctl_indexer *ix);
/* Every object / every key, in no particular order. [any thread] */
KCTL_API int kctl_indexer_list(kctl_indexer *ix, kctl_obj_list *out);
KCTL_API int kctl_indexer_list_keys(kctl_indexer *ix, kctl_str_list *out);
/* The objects / keys whose index `name` has `value`; NOT_FOUND for an
   unknown index. [any thread] */
KCTL_API int kctl_indexer_by_index(kctl_indexer *ix, const char *name, const char *value, kctl_obj_list *out);
KCTL_API int kctl_indexer_index_keys(kctl_indexer *ix, const char *name, const char *value, kctl_str_list *out);
/* The values index `name` holds. [any thread] */
KCTL_API int kctl_indexer_list_index_values(kctl_indexer *ix, const char *name, kctl_str_list *out);
/* Replace the whole contents with objs[0..n) (a relist), atomically: a
   reader sees all old or all new. rv (may be NULL) is remembered as the
   resourceVersion the contents are from. FULL (unchanged) when objs would
   not fit the desc's bounds; NOMEM. [any thread] */
KCTL_API int kctl_indexer_replace(kctl_indexer *ix, kctl_obj *const *objs, size_t n, const char *rv);
/* The rv given to the last replace ("" before any). Copies into buf. [any thread] */
KCTL_API int kctl_indexer_resource_version(kctl_indexer *ix, char *buf, size_t cap);

/* ====================================================== >>fifo DELTA FIFO */
/* client-go's DeltaFIFO: per key, the list of changes (deltas) not yet
   processed, oldest first, keys in first-in order. The reflector feeds
   it; pop hands one key's whole list to one processing function, which
   updates the cache and tells the handlers. "Known objects" (the indexer
   the FIFO feeds) let it recognise deletions a relist reveals. */
typedef enum kctl_delta_type {
    KCTL_DELTA_ADDED = 1,
    KCTL_DELTA_UPDATED,
    KCTL_DELTA_DELETED,
    KCTL_DELTA_REPLACED, /* listed by a relist */
    KCTL_DELTA_SYNC      /* a periodic resync of a cached object */
} kctl_delta_type;

typedef struct kctl_delta {
    int type;                 /* kctl_delta_type */
    kctl_obj *obj;            /* the object; for a DELETED with final_state_unknown, the last known one, or NULL */
    bool final_state_unknown; /* DELETED found by a relist: the real deletion was missed */
} kctl_delta;

typedef struct kctl_fifo kctl_fifo;

/* FIFO options; zero = KCTL_MALLOC/KCTL_FREE and no known objects. The
   known objects (an indexer) are not owned and must outlive the FIFO. */
typedef struct kctl_fifo_desc {
    kctl_allocator allocator;
    kctl_indexer *known;
} kctl_fifo_desc;

/* Process one key's deltas (oldest first; n >= 1). Runs with the FIFO
   locked, as in client-go, so pops never overlap and nothing can slip in
   between the cache and the FIFO: keep it short (update the cache, tell
   the handlers, which only enqueue), and do not call the FIFO from it.
   Return KCTL_ERR_AGAIN to put the deltas back at the end of the queue
   (pop then returns OK); any other result is passed on by pop. */
typedef int (*kctl_fifo_process_fn)(const char *key, const kctl_delta *deltas, size_t n, void *user_data);

/* Create a FIFO; desc may be NULL. [any thread] */
KCTL_API int kctl_fifo_create(const kctl_fifo_desc *desc, kctl_fifo **out);
/* Free it and the deltas still queued (NULL is fine). [not thread-safe] */
KCTL_API void kctl_fifo_destroy(kctl_fifo *f);
/* Queue an ADDED / UPDATED delta for obj (the FIFO takes a reference). [any thread] */
KCTL_API int kctl_fifo_add(kctl_fifo *f, kctl_obj *obj);
KCTL_API int kctl_fifo_update(kctl_fifo *f, kctl_obj *obj);
/* Queue a DELETED delta, unless obj's key is known neither to the FIFO nor
   to the known objects (then nothing happens, KCTL_OK). Two DELETED in a
   row collapse into the one that says more (a real object beats an
   unknown final state). [any thread] */
KCTL_API int kctl_fifo_delete(kctl_fifo *f, kctl_obj *obj);
/* A relist: REPLACED for every object listed; for every key queued or
   known but not listed, a DELETED with final_state_unknown carrying the
   last known object. The first complete replace sets what has_synced
   waits for. Out of memory midway leaves part of it queued (NOMEM): list
   again (before the first complete one, has_synced waits for those keys
   too). [any thread] */
KCTL_API int kctl_fifo_replace(kctl_fifo *f, kctl_obj *const *objs, size_t n);
/* A SYNC for every known object whose key has no queued deltas. [any thread] */
KCTL_API int kctl_fifo_resync(kctl_fifo *f);
/* Wait for a key and process it (see kctl_fifo_process_fn). SHUTDOWN once
   closed and empty; fn's result otherwise. Under KCTL_NO_THREADS it does
   not block (AGAIN). [any thread] */
KCTL_API int kctl_fifo_pop(kctl_fifo *f, kctl_fifo_process_fn fn, void *user_data);
/* As pop, but AGAIN at once when no key is queued. [any thread] */
KCTL_API int kctl_fifo_try_pop(kctl_fifo *f, kctl_fifo_process_fn fn, void *user_data);
/* True once the keys of the first replace (its objects and the deletions
   it found) have all been popped and processed (a key put back with
   AGAIN still counts). As in client-go, an add, update or delete before
   any replace makes it true at once. [any thread] */
KCTL_API bool kctl_fifo_has_synced(kctl_fifo *f);
/* Keys queued. [any thread] */
KCTL_API size_t kctl_fifo_len(kctl_fifo *f);
/* Close: blocked pops return SHUTDOWN once the queue is empty; writes
   return SHUTDOWN. [any thread] */
KCTL_API void kctl_fifo_close(kctl_fifo *f);

/* ================================================== >>transport TRANSPORT */
/* A store of objects, seen the way Kubernetes clients see an API server.
   The rest of kctl knows nothing else about the store: implement this
   vtable to plug in your own (in the shape of a miniaudio backend), and
   call any store through the kctl_transport_* wrappers below.

   Lifecycle: the transport is created by its own constructor (the built-in
   one: kctl_memstore_transport), used from any thread (every entry must be
   thread-safe), and freed with destroy (optional).

   A resource is named by group ("" for the core group), version,
   resource (the plural) and a namespace. "" or NULL means all namespaces
   for list and watch; for a write of a document (create, update,
   update_status), the document's own metadata.namespace (none:
   cluster-scoped), so the controller of an all-namespaces informer writes
   through the same resource; for a call by name (get, patch, remove), a
   cluster-scoped object: name the namespace there (kctl_key_split). A
   document whose namespace differs from a given one is refused (400).

   Every entry returns a result code and, when it fails and st is not NULL,
   may describe the failure in *st as an API server's Status does (code,
   reason, message, field causes): see kctl_api_status. Entries receive
   exact lengths (the wrappers resolve KCTL_NTS). A transport must handle:
     list           the objects (references) matching the selectors, and the
                    resourceVersion the list is from. With opts->limit > 0, a
                    page of at most that many objects and a continue token
                    ("" on the last page); every page of one list is from the
                    first page's version (a consistent snapshot), and a token
                    the store can no longer serve is GONE (list again from
                    scratch).
     watch_open     a stream of the changes after from_rv ("": first an ADDED
                    for every object there now). GONE: from_rv is older than
                    the store remembers: list again. TIMEOUT: from_rv is
                    newer than the store (Kubernetes' "too large resource
                    version"); with a Status whose cause (or, as older API
                    servers say it, message) is ResourceVersionTooLarge /
                    "Too large resource version", the store went back in
                    time (restored from an older snapshot, restarted without
                    its history): a reflector lists again after a backoff,
                    as client-go's does. Versions are opaque strings
                    (a store whose versions have no order, content hashes
                    say, answers GONE for any it does not know: a relist
                    is always correct).
     watch_next     the next event, waiting at most timeout_ns (0: look once,
                    without waiting; a polling transport polls once): ADDED,
                    MODIFIED, DELETED (the object's last state, at the
                    deletion's version) or BOOKMARK (no object; only a
                    resourceVersion to resume from). An object that stops
                    matching a selector arrives as DELETED with its last
                    matching content at the event's version; one that starts
                    matching as ADDED. AGAIN: nothing yet. GONE: list again.
                    IO: the stream broke: watch again from the last version
                    seen (after a backoff). CLOSED: the store ended the
                    stream cleanly (an API server's timeoutSeconds): watch
                    again from the last version seen, at once.
     watch_close    end a stream (always, whatever watch_next said).
     get            one object by name, straight from the store.
     create         a new object from a JSON document. EXISTS if it is there.
                    The status sent with it is dropped (the status is
                    written through update_status).
     update         replace an object; if the document carries a
                    metadata.resourceVersion, it must be the current one
                    (else CONFLICT: get it again, reapply, retry). The status
                    sent with it is ignored.
     update_status  replace only the status (same precondition).
     patch          (optional: NULL) apply a JSON merge patch (RFC 7386) to
                    the object, or with KCTL_PATCH_STATUS to its status; a
                    metadata.resourceVersion in the patch is a precondition.
                    Without this entry, kctl_transport_patch reads, merges
                    and updates with the read version as the precondition.
     remove         delete by name, with optional preconditions (CONFLICT).
                    An object with finalizers is not removed: it gets a
                    deletionTimestamp and stays until they are gone, and
                    *out (when out is not NULL) gets it; *out is NULL when
                    the object is gone.
     watch_notify   (optional: NULL) the wake-up hook of a single-threaded
                    program (kctl_manager_step): from now until watch_close,
                    call wake->fn(wake->user_data) whenever stream w may have
                    something new for watch_next (an event, a bookmark, its
                    end or breakage). It may be called from any thread, at
                    any time (while the program is inside a step too), with
                    the transport's locks held: it must only record the
                    wake-up (post a semaphore, write to an eventfd or a
                    pipe, set a flag an interrupt handler reads) and never
                    call kctl or the transport. A wake-up too many is
                    harmless; one too few is a bug. OK: registered; any
                    other code: not (then the stream is polled). The
                    memstore calls it for every write it records (its own
                    thread's writes included, from inside the write). A
                    transport over a socket may instead call it from its
                    own poll loop, or leave the entry NULL: without it, an
                    idle watch is polled (watch_next with timeout 0) every
                    KCTL_REFLECTOR_POLL_NS, as a transport whose events only
                    come when asked must be; with it, an idle watch costs no
                    wake-up at all until its stall deadline.
   NOT_FOUND for objects that are not there, INVALID_ARG for malformed
   input or selectors and for objects the store refuses (a Status with
   reason BadRequest or Invalid says why), UNAUTHORIZED/FORBIDDEN/IO/TIMEOUT
   from remote stores. Objects handed out are references the caller
   releases. */
typedef struct kctl_resource {
    const char *group;
    const char *version;
    const char *resource;
    const char *ns;
} kctl_resource;

/* The verbs, as the memstore's faults and the manager's metrics name them. */
typedef enum kctl_verb {
    KCTL_VERB_LIST = 1, KCTL_VERB_WATCH, KCTL_VERB_GET, KCTL_VERB_CREATE,
    KCTL_VERB_UPDATE, KCTL_VERB_UPDATE_STATUS, KCTL_VERB_PATCH, KCTL_VERB_REMOVE,
    KCTL_VERB_COUNT
} kctl_verb;

/* One cause of a refusal: the field and why (metav1.StatusCause). */
typedef struct kctl_status_cause {
    const char *reason;  /* "FieldValueInvalid", "FieldValueRequired", "FieldValueForbidden", ... */
    const char *message; /* "Invalid value: \"Web\": a lowercase RFC 1123 subdomain must ..." */
    const char *field;   /* "metadata.name" */
} kctl_status_cause;

/* Why a store call failed, as an API server says it (metav1.Status): the
   HTTP code, a machine-readable reason, a message for people, what it was
   about and, for a refused object, the fields at fault. Pass a zeroed one
   (or NULL when you do not care); a failing call fills it, a successful
   one leaves it as it was. Its strings live in one block it owns (from
   .allocator; zero = KCTL_MALLOC/KCTL_FREE): kctl_api_status_clear frees
   them, and a call that fills it frees what it held first, so one status
   can serve many calls. Strings are "" when absent, never NULL once filled.
       kctl_api_status st = { 0 };
       if (kctl_transport_create(&t, &res, doc, KCTL_NTS, NULL, &st) != KCTL_OK)
           fprintf(stderr, "%s\n", st.message);  // Thermostat.example.io "Web" is invalid: metadata.name: ...
       kctl_api_status_clear(&st);
   Filled for: every refusal of the memstore and of the API-server rules
   (as a real API server words them; under KCTL_NO_VALIDATION the code,
   reason and details only: message "", no causes), and for remote stores
   from the server's own Status body. */
typedef struct kctl_api_status {
    int code;                         /* HTTP status code: 404, 409, 410, 422...; 0: not filled */
    const char *reason;               /* "NotFound", "AlreadyExists", "Conflict", "Invalid", "BadRequest", "Expired", ... */
    const char *message;
    const char *name, *group, *kind;  /* details: what the refusal is about */
    uint32_t retry_after_s;           /* details.retryAfterSeconds (0: none) */
    size_t cause_count;
    const kctl_status_cause *causes;
    kctl_allocator allocator;         /* set it before the call to choose where the strings go */
    void *mem_;                       /* private: the block */
} kctl_api_status;

/* Fill st (freeing what it held) with code, reason, message and details
   (each may be NULL: ""), and causes[0..n). For transports and stores.
   NOMEM leaves st cleared but for code, which is kept. [any thread, given its own st] */
KCTL_API int kctl_api_status_set(kctl_api_status *st, int code, const char *reason, const char *message,
                                 const char *name, const char *group, const char *kind,
                                 const kctl_status_cause *causes, size_t n);
/* Fill st from a Status document (an API server's error body, or a watch
   ERROR event's object); http_code is used when the body has no code.
   INVALID_ARG if the text is not a Status object, NOMEM. [any thread, given its own st] */
KCTL_API int kctl_api_status_parse(kctl_api_status *st, const char *json, size_t len, int http_code);
/* Write st as a Status document (kind Status, apiVersion v1, status
   Failure, message, reason, details with causes, code), as an API server
   answers a refused request. [any thread, given its own writer] */
KCTL_API void kctl_api_status_write(const kctl_api_status *st, kctl_jw *w);
/* Free st's strings and zero it but for its allocator (a zeroed st is fine). [any thread, given its own st] */
KCTL_API void kctl_api_status_clear(kctl_api_status *st);
/* The kctl result code for an API server's HTTP code and Status reason:
   2xx OK; 409 CONFLICT, or EXISTS for reason AlreadyExists; 410 GONE;
   404 NOT_FOUND; 401 UNAUTHORIZED; 403 FORBIDDEN; 408 and 504 TIMEOUT;
   413 TOO_LARGE; 429 and 503 AGAIN (try later); other 5xx IO; any other
   code INVALID_ARG (400, 405, 422: the request or object is wrong). [any thread] */
KCTL_API int kctl_api_status_result(int http_code, const char *reason);

typedef struct kctl_list_opts {
    const char *label_selector; /* NULL: everything */
    const char *field_selector; /* metadata.name / metadata.namespace */
    uint32_t limit;             /* page size; 0: no paging */
    const char *continue_token; /* from the previous page, or NULL */
} kctl_list_opts;

#define KCTL_RV_MAX 64        /* room for a resourceVersion */
#define KCTL_CONTINUE_MAX 1024 /* room for a continue token */

typedef struct kctl_list_result {
    kctl_obj_list items;
    char resource_version[KCTL_RV_MAX];
    char continue_token[KCTL_CONTINUE_MAX];
} kctl_list_result;

/* Preconditions of a delete (metav1.Preconditions); NULL or "" fields are
   not checked. A mismatch is CONFLICT. */
typedef struct kctl_delete_opts {
    const char *resource_version;
    const char *uid;
} kctl_delete_opts;

/* Patch flags. */
#define KCTL_PATCH_STATUS 1u /* patch the status subresource */

typedef enum kctl_event_type {
    KCTL_EVENT_ADDED = 1,
    KCTL_EVENT_MODIFIED,
    KCTL_EVENT_DELETED,
    KCTL_EVENT_BOOKMARK
} kctl_event_type;

typedef struct kctl_event {
    int type;                            /* kctl_event_type */
    kctl_obj *obj;                       /* a reference (NULL for BOOKMARK) */
    char resource_version[KCTL_RV_MAX];  /* the version this event brings the watcher to */
} kctl_event;

/* A transport's stream: define struct kctl_watch in your transport, or
   cast a type of your own (kctl never defines it; the memstore casts). */
typedef struct kctl_watch kctl_watch;

/* A wake-up: fn(user_data), called by a transport when one of its streams
   has something new (see watch_notify below), so that a single-threaded
   program sleeping until its next deadline wakes early. fn must only
   record it (post, write, set a flag): it may run on any thread, under
   the transport's locks. All zero: none. */
typedef struct kctl_wake {
    void (*fn)(void *user_data);
    void *user_data;
} kctl_wake;

typedef struct kctl_transport_vtable {
    int  (*list)(void *self, const kctl_resource *res, const kctl_list_opts *opts, kctl_list_result *out, kctl_api_status *st);
    int  (*watch_open)(void *self, const kctl_resource *res, const kctl_list_opts *opts, const char *from_rv, kctl_watch **out,
                       kctl_api_status *st);
    int  (*watch_next)(void *self, kctl_watch *w, uint64_t timeout_ns, kctl_event *ev, kctl_api_status *st);
    void (*watch_close)(void *self, kctl_watch *w);
    int  (*get)(void *self, const kctl_resource *res, const char *name, kctl_obj **out, kctl_api_status *st);
    int  (*create)(void *self, const kctl_resource *res, const char *json, size_t len, kctl_obj **out, kctl_api_status *st);
    int  (*update)(void *self, const kctl_resource *res, const char *json, size_t len, kctl_obj **out, kctl_api_status *st);
    int  (*update_status)(void *self, const kctl_resource *res, const char *json, size_t len, kctl_obj **out, kctl_api_status *st);
    int  (*patch)(void *self, const kctl_resource *res, const char *name, const char *patch, size_t len, unsigned flags,
                  kctl_obj **out, kctl_api_status *st); /* optional */
    int  (*remove)(void *self, const kctl_resource *res, const char *name, const kctl_delete_opts *opts, kctl_obj **out,
                   kctl_api_status *st);
    void (*destroy)(void *self); /* optional */
    int  (*watch_notify)(void *self, kctl_watch *w, const kctl_wake *wake); /* optional */
} kctl_transport_vtable;

typedef struct kctl_transport {
    const kctl_transport_vtable *vt;
    void *self;
} kctl_transport;

/* The entries through one call each: they check t, res and the names
   (INVALID_ARG), resolve KCTL_NTS, set *out to NULL first, and pass st on
   (NULL: no detail). What each does is the vtable's, above. [any thread] */
KCTL_API int kctl_transport_list(const kctl_transport *t, const kctl_resource *res, const kctl_list_opts *opts,
                                 kctl_list_result *out, kctl_api_status *st);
KCTL_API int kctl_transport_watch_open(const kctl_transport *t, const kctl_resource *res, const kctl_list_opts *opts,
                                       const char *from_rv, kctl_watch **out, kctl_api_status *st);
KCTL_API int kctl_transport_watch_next(const kctl_transport *t, kctl_watch *w, uint64_t timeout_ns, kctl_event *ev,
                                       kctl_api_status *st);
KCTL_API void kctl_transport_watch_close(const kctl_transport *t, kctl_watch *w);
/* Register wake for stream w (see watch_notify). INVALID_ARG when t, w,
   wake or wake->fn is NULL, or the transport has no watch_notify entry
   (poll the stream then); else the entry's result. [any thread] */
KCTL_API int kctl_transport_watch_notify(const kctl_transport *t, kctl_watch *w, const kctl_wake *wake);
KCTL_API int kctl_transport_get(const kctl_transport *t, const kctl_resource *res, const char *name, kctl_obj **out,
                                kctl_api_status *st);
KCTL_API int kctl_transport_create(const kctl_transport *t, const kctl_resource *res, const char *json, size_t len,
                                   kctl_obj **out, kctl_api_status *st);
KCTL_API int kctl_transport_update(const kctl_transport *t, const kctl_resource *res, const char *json, size_t len,
                                   kctl_obj **out, kctl_api_status *st);
KCTL_API int kctl_transport_update_status(const kctl_transport *t, const kctl_resource *res, const char *json, size_t len,
                                          kctl_obj **out, kctl_api_status *st);
/* Without a patch entry: get, merge, update (or update_status) with the
   version read as the precondition; CONFLICT if it changed in between. */
KCTL_API int kctl_transport_patch(const kctl_transport *t, const kctl_resource *res, const char *name, const char *patch,
                                  size_t len, unsigned flags, kctl_obj **out, kctl_api_status *st);
KCTL_API int kctl_transport_remove(const kctl_transport *t, const kctl_resource *res, const char *name,
                                   const kctl_delete_opts *opts, kctl_obj **out, kctl_api_status *st);
/* Free the transport through its destroy entry, if it has one. [not thread-safe] */
KCTL_API void kctl_transport_destroy(kctl_transport *t);

/* Write `status` (a JSON value) as obj's status through update_status,
   with obj's resourceVersion as the precondition, unless it equals obj's
   current status semantically (then nothing is written and *written is
   false): the status write that changes nothing, which would wake the
   controller again forever, never happens. *out (may be NULL) gets the
   stored object; len may be KCTL_NTS; *st (may be NULL) says why a write
   failed. Scratch memory (freed before it returns) comes from the
   allocator obj was made with (its kctl_obj_opts.allocator). CONFLICT:
   re-read and retry (kctl_retry_on_conflict). [any thread] */
KCTL_API int kctl_status_update(const kctl_transport *t, const kctl_resource *res, const kctl_obj *obj,
                                const char *status, size_t len, bool *written, kctl_obj **out, kctl_api_status *st);

/* A client-side write budget: a transport over another whose writes
   (create, update, update_status, patch, remove) pass at most one per
   interval_ns on average, burst at once (GCRA, in integers: no float);
   reads and watches pass freely. A write past the budget is not sent: it
   answers AGAIN with the Status a server's throttling gives (429
   TooManyRequests, retry_after_s: when the next write may pass, rounded
   up), so a controller backs off (or, in offline mode, parks) as it would
   for the server's. Give all the controllers of one device (a manager)
   the same budget's transport: a bug that loops on writes then costs the
   store its budget, not more. Options; zero means the default:
     inner        required; not owned (destroy it after the budget)
     interval_ns  required: 1e9 / writes per second (KCTL_SEC(6): 10 a minute)
     burst        [1]
     clock        [monotonic]
     allocator    [KCTL_MALLOC/KCTL_FREE]
   create: INVALID_ARG, NOMEM. [any thread] */
typedef struct kctl_write_budget kctl_write_budget;
typedef struct kctl_write_budget_desc {
    kctl_transport inner;
    uint64_t interval_ns;
    uint32_t burst;
    kctl_clock clock;
    kctl_allocator allocator;
} kctl_write_budget_desc;
KCTL_API int kctl_write_budget_create(const kctl_write_budget_desc *desc, kctl_write_budget **out);
/* The transport to hand out; valid until destroy. [any thread] */
KCTL_API kctl_transport kctl_write_budget_transport(kctl_write_budget *b);
/* Writes passed and refused so far (either may be NULL). [any thread] */
KCTL_API void kctl_write_budget_read_stats(kctl_write_budget *b, uint64_t *passed, uint64_t *refused);
/* Free it (NULL is fine); its transport must be out of use. [not thread-safe] */
KCTL_API void kctl_write_budget_destroy(kctl_write_budget *b);

/* client-go's RetryOnConflict: call fn until it returns anything but
   CONFLICT, at most attempts times (0: 5, as retry.DefaultRetry), sleeping
   delay_ns (0: 10 ms) of real time between tries. fn re-reads and
   reapplies. Returns fn's last result. [any thread] */
KCTL_API int kctl_retry_on_conflict(uint32_t attempts, uint64_t delay_ns, int (*fn)(void *user_data), void *user_data);

/* Release an event's object and clear it. */
KCTL_API void kctl_event_clear(kctl_event *ev);
/* Release a list result's objects. */
KCTL_API void kctl_list_result_free(kctl_list_result *r);

/* ============================================== >>apisrv API-SERVER RULES */
/* What a Kubernetes API server does to a write before it stores it, for
   every store that keeps objects itself (the memstore, the etcd transport,
   a test server), so they all refuse and change objects alike and none
   keeps a copy of the rules:
   - names: metadata.name required (or generateName: a 5-character random
     suffix; UNSUPPORTED under KCTL_NO_GENERATE_NAME), a lowercase RFC 1123
     subdomain (253 characters at most);
     a namespace is an RFC 1123 label (63); the document's namespace must
     be the request's (400 BadRequest otherwise);
   - metadata: labels and annotation keys are qualified names, label values
     valid label values, annotations 256 KiB at most, finalizers qualified
     names, owner references complete with at most one controller; no NUL
     in any of them;
   - what the server owns: uid and creationTimestamp set on create and kept
     after; resourceVersion the store's; generation 1 on create, bumped
     when anything but metadata and status changes (the custom resource
     rule) and when a deletion mark is set on an object that has one;
   - the status subresource: create drops the status sent (the owner's
     apply keeps it), update keeps the stored status, update_status
     changes the status alone;
   - finalizers: a delete of an object with finalizers sets
     deletionTimestamp (and deletionGracePeriodSeconds 0) and keeps it; a
     deleting object takes no new finalizers (422 Invalid); the write that
     removes its last finalizer removes it;
   - a write that changes nothing is no write (no new version, no event);
   - every refusal comes with the Status an API server sends (see
     kctl_api_status): AlreadyExists, NotFound, Conflict, Invalid with its
     field causes, BadRequest, RequestEntityTooLarge.
   KCTL_NO_VALIDATION (COMPILE-TIME OPTIONS) leaves out the format checks
   of names and metadata and the refusals' words, and keeps the rest. */

typedef enum kctl_apisrv_outcome {
    KCTL_APISRV_WRITE = 1, /* store the document written to out */
    KCTL_APISRV_UNCHANGED, /* nothing changes: answer the stored object */
    KCTL_APISRV_REMOVE     /* remove the stored object now; out holds the answer's document */
} kctl_apisrv_outcome;

/* The stored object named ns/name, or NULL; the store keeps it valid for
   the whole call (no reference is taken: e.g. the store's lock is held). */
typedef const kctl_obj *(*kctl_apisrv_lookup_fn)(const char *ns, const char *name, void *user_data);

/* One write to decide. Strings are NUL-terminated unless a length says
   otherwise; nothing is kept after the call. */
typedef struct kctl_apisrv_req {
    kctl_verb verb;                /* CREATE, UPDATE, UPDATE_STATUS, PATCH or REMOVE */
    const kctl_resource *res;
    const char *json;              /* CREATE/UPDATE/UPDATE_STATUS: the document sent; PATCH: the merge patch */
    size_t len;                    /* its length (KCTL_NTS: NUL-terminated) */
    const char *name;              /* PATCH, REMOVE: the object's name */
    unsigned patch_flags;          /* PATCH: KCTL_PATCH_STATUS */
    const kctl_delete_opts *del;   /* REMOVE: preconditions (may be NULL) */
    kctl_apisrv_lookup_fn lookup;  /* required */
    void *lookup_user_data;
    bool apply;                    /* the owner's apply (CREATE): create or replace, no version precondition, a status kept on create */
    const char *uid;               /* CREATE: the new object's uid */
    uint64_t name_seed;            /* CREATE with generateName: where the random suffix comes from */
    const char *now;               /* RFC 3339 time: creationTimestamp, deletionTimestamp */
    const char *rv;                /* the resourceVersion to write into out (NULL: none, as etcd stores objects) */
    kctl_allocator allocator;      /* for scratch memory */
    kctl_json_limits limits;       /* for the document (too big: RequestEntityTooLarge) */
} kctl_apisrv_req;

typedef struct kctl_apisrv_decision {
    kctl_apisrv_outcome outcome;
    const kctl_obj *cur;           /* what lookup gave for the object written (NULL: none) */
} kctl_apisrv_decision;

/* Decide a write: OK with the decision and, for WRITE, the document to
   store in out (a writer the caller owns; for a REMOVE caused by an
   update, the updated object at its old version, as an API server answers
   it; empty for a REMOVE by delete). A refusal returns its code (EXISTS,
   NOT_FOUND, CONFLICT, INVALID_ARG, TOO_LARGE) with *st filled as an API
   server words it (st may be NULL); NOMEM. The store then does what the
   decision says, atomically with the lookups it answered. [any thread] */
KCTL_API int kctl_apisrv_decide(const kctl_apisrv_req *req, kctl_jw *out, kctl_apisrv_decision *d, kctl_api_status *st);
/* Fill *st with the Status an API server gives for code about res/name
   (EXISTS: AlreadyExists; NOT_FOUND: NotFound; CONFLICT: the optimistic
   lock message; GONE: Expired) and return code. [any thread] */
KCTL_API int kctl_apisrv_refuse(int code, const kctl_resource *res, const char *name, kctl_api_status *st);
/* Check a stored object as a write would have (names, namespace, metadata;
   under KCTL_NO_VALIDATION what a create still checks: its name and
   namespace), e.g. one loaded from a file: OK, or INVALID_ARG with *st; NOMEM.
   allocator (NULL: KCTL_MALLOC/KCTL_FREE) for scratch memory. [any thread] */
KCTL_API int kctl_apisrv_check(const kctl_resource *res, const kctl_obj *obj, const kctl_allocator *allocator, kctl_api_status *st);
/* obj with its metadata.resourceVersion set to rv (a new object, opts as
   for kctl_obj_parse): a store that keeps versions outside the document
   (etcd's mod_revision) or sends an object at another version (a DELETED
   event) makes it this way. [any thread] */
KCTL_API int kctl_apisrv_with_rv(const kctl_obj *obj, const char *rv, const kctl_obj_opts *opts, kctl_obj **out);
/* The same from a stored document's text json[0..len) (KCTL_NTS): the
   object it holds at version rv (NULL: as it is). PROTO for text that is
   no object document. [any thread] */
KCTL_API int kctl_apisrv_parse_at(const char *json, size_t len, const char *rv, const kctl_obj_opts *opts, kctl_obj **out);
/* The time now as RFC 3339 in UTC, seconds (creationTimestamp). [any thread] */
KCTL_API void kctl_apisrv_now(char buf[32]);

/* ==================================================== >>memstore MEMSTORE */
/* The embedded default store: an in-process transport with the semantics
   of a Kubernetes API server, so the toolkit runs with no network: one
   revision counter for every write (the resourceVersion); every write
   decided by the API-SERVER RULES above (validation with the server's
   Status detail, uid and creationTimestamp, generation, the status
   subresource, finalizers and deletionTimestamp, no-op writes skipped);
   watches over a bounded history of events (older: GONE), compaction,
   bookmarks; paged lists as snapshots (8 lists in progress remembered at
   once; a continue token of one forgotten is GONE once the store has
   moved on; not under KCTL_NO_PAGING); and fault injection for tests
   (not under KCTL_NO_FAULTS). */
typedef struct kctl_memstore kctl_memstore;

/* Options; zero means the default:
     allocator      KCTL_MALLOC/KCTL_FREE
     clock          monotonic (bookmark timing)
     history        the most events kept for watches [1024]. The ring
                    grows as writes come, doubling from 8 up to history,
                    so an empty store holds none (the memory is what the
                    events keep: an event holds the object written and the
                    one it replaced, shared with the store and watchers
                    while they hold them); a watch from a version older
                    than what the ring holds gets GONE
     bookmark_every 0: no bookmarks by count; N: one after every N events
                    a watcher has gone past
     bookmark_interval_ns  0: none by time; T: a bookmark when a watcher
                    has had nothing for T on the store's clock
     obj_opts       how objects are made (allocator, codec, limits)
     path           NULL: in memory only. A file: loaded at create if it
                    exists, every object checked as a write would check it
                    (a truncated, corrupt or invalid file is refused with
                    PROTO and left as it is; a file that exists but cannot
                    be read is IO, never taken for a first start), written
                    by kctl_memstore_save (a temporary file, fsync, rename:
                    a crash keeps the previous file whole; through a
                    symbolic link, the file it names). A file from an older
                    kctl holding objects these rules refuse (an uppercase
                    name, say) is PROTO too: move it aside, or fix and
                    reload it. Two stores must not share a path. Copied.
     save_on_write  every write is appended to a journal beside the file
                    ("<file>.journal", see PERSISTENCE below) and is
                    acknowledged only once its record is durable (as sync
                    says). A record that cannot be written (a full disk:
                    ENOSPC) makes the call return IO (with a Status) and
                    the write does not happen, in memory nor for watchers;
                    the store stays usable and takes writes again once
                    there is room.
     sync           when the journal is fsynced (save_on_write):
                    KCTL_MEMSTORE_SYNC_EVERY (the default): before a write
                      is acknowledged; writers that come together share
                      one fsync (group commit);
                    KCTL_MEMSTORE_SYNC_INTERVAL: at most sync_interval_ms
                      after a write (a write past the interval syncs at
                      once; the others wait for the store's flusher thread,
                      or, on a virtual clock or under KCTL_NO_THREADS, for
                      kctl_memstore_flush), and at kctl_memstore_save and
                      destroy; a crash of the
                      program loses nothing acknowledged, a power cut the
                      writes since the last fsync;
                    KCTL_MEMSTORE_SYNC_NEVER: the system writes back when
                      it likes (a power cut may lose any recent write).
     sync_interval_ms  for KCTL_MEMSTORE_SYNC_INTERVAL [100]
     compact_bytes  the journal is folded into a new snapshot once it is
                    longer than this and than the last snapshot [1 MiB],
                    so a write costs its record plus at most about as much
                    again of snapshot, whatever the store's size
     fs             the file layer [kctl_fs_posix()]: a port to another
                    file system, or a test's faults. Copied.
     max_objects    [0: no bound] objects the store holds at most
     max_bytes      [0: no bound] bytes of the stored objects' JSON
                    documents at most. A create, or a replace that grows a
                    document, that would pass either bound is refused with
                    FULL (a Status with HTTP 507, InsufficientStorage), the
                    store unchanged, logged (MEMSTORE_FULL) and counted
                    (kctl_memstore_stats.refused_full); deletes always pass.
                    UNSUPPORTED under KCTL_NO_MEMSTORE_BOUND
     logger         why a journal's tail was dropped at load, a failed
                    fsync or compaction, a write refused FULL [silent]

   PERSISTENCE. The file at path is a snapshot (the format of kctl 0.4:
   every object, a checksum); "<file>.journal" holds the writes since, one
   record each: a 12-byte frame (payload length, 4 bytes little-endian;
   FNV-1a 64 of the length and the payload, 8 bytes) and the payload
   "<P|D> <revision> <uid sequence> <storage key>\n<document>". Loading
   reads the snapshot, then replays the journal's records past its
   revision, and stops at the first record that is torn (a crash in the
   middle of its write) or corrupt (a length past the end, a wrong
   checksum, a revision out of order, a document a write could not have
   made): everything before it is kept, the reason is logged
   (KCTL_LOGITEM_MEMSTORE_JOURNAL_TORN or _CORRUPT) and counted
   (kctl_memstore_read_persist_stats), and the tail is cut off before
   the next record is appended. A snapshot is written as a temporary
   file, fsynced, renamed over the file, and the directory fsynced; only
   then is the journal emptied, so a crash at any step leaves a store
   that loads (the journal's records the snapshot holds are skipped).
   A failed fsync of the journal (the disk failing, not filling) fails
   the writes waiting on it with IO, but they were already made in
   memory and sent to watchers (as an etcd timeout, such a write may or
   may not last); the store then refuses writes (IO) until a snapshot of
   what it holds succeeds. */
typedef enum kctl_memstore_sync {
    KCTL_MEMSTORE_SYNC_EVERY = 0,
    KCTL_MEMSTORE_SYNC_INTERVAL = 1,
    KCTL_MEMSTORE_SYNC_NEVER = 2
} kctl_memstore_sync;

/* The file layer the memstore persists through: POSIX calls by default
   (kctl_fs_posix), or a port's (LittleFS, FatFs) or a test's. Each entry
   answers as its POSIX namesake: a descriptor or 0 for success, -1 with
   errno set for failure (ENOENT from open_fn: nothing is there).
     open_fn      flags: KCTL_FS_READ; or KCTL_FS_WRITE (read and write,
                  created 0600 if missing) with KCTL_FS_TRUNC (emptied) or
                  KCTL_FS_APPEND (every write at the end); KCTL_FS_DIR: a
                  directory, opened only to be synced
     read_fn, write_fn  as read() and write() (a write may be short)
     sync_fn      fsync(); truncate_fn ftruncate(); close_fn close()
     rename_fn    rename(): atomic replace; unlink_fn unlink()
   All entries are required. [any thread: called with the store's lock
   held, except sync_fn, which group commit calls without it] */
enum { KCTL_FS_READ = 0, KCTL_FS_WRITE = 1, KCTL_FS_TRUNC = 2, KCTL_FS_APPEND = 4, KCTL_FS_DIR = 8 };
typedef struct kctl_fs {
    int (*open_fn)(const char *path, int flags, void *user_data);
    int64_t (*read_fn)(int fd, void *buf, size_t n, void *user_data);
    int64_t (*write_fn)(int fd, const void *buf, size_t n, void *user_data);
    int (*sync_fn)(int fd, void *user_data);
    int (*truncate_fn)(int fd, uint64_t size, void *user_data);
    int (*close_fn)(int fd, void *user_data);
    int (*rename_fn)(const char *from, const char *to, void *user_data);
    int (*unlink_fn)(const char *path, void *user_data);
    void *user_data;
} kctl_fs;

/* The POSIX file layer (all zero under KCTL_NO_FILES). [any thread] */
KCTL_API kctl_fs kctl_fs_posix(void);

typedef struct kctl_memstore_desc {
    kctl_allocator allocator;
    kctl_clock clock;
    uint32_t history;
    uint32_t bookmark_every;
    uint64_t bookmark_interval_ns;
    kctl_obj_opts obj_opts;
    const char *path;
    bool save_on_write;
    kctl_memstore_sync sync;
    uint32_t sync_interval_ms;
    uint64_t compact_bytes;
    const kctl_fs *fs;
    uint32_t max_objects;
    size_t max_bytes;
    kctl_logger logger;
} kctl_memstore_desc;

/* What persistence did since the store was created. */
typedef struct kctl_memstore_persist_stats {
    uint64_t records;       /* journal records appended */
    uint64_t bytes_written; /* every byte written: records, journal headers, snapshots */
    uint64_t syncs;         /* fsyncs of the journal (group commit: fewer than records) */
    uint64_t snapshots;     /* snapshots written (compactions and kctl_memstore_save) */
    uint64_t journal_bytes; /* the journal's length now */
    uint64_t replayed;      /* records replayed at create */
    uint64_t dropped_bytes; /* journal bytes dropped at create (a torn or corrupt tail) */
    uint32_t stop_item;     /* why replay stopped early (a kctl_log_item; 0: it did not) */
} kctl_memstore_persist_stats;

KCTL_API int kctl_memstore_create(const kctl_memstore_desc *desc, kctl_memstore **out);
/* Free the store; no transport call may be running, every watch closed. */
KCTL_API void kctl_memstore_destroy(kctl_memstore *ms);
/* The store as a transport (its destroy is NULL: the store is yours). */
KCTL_API kctl_transport kctl_memstore_transport(kctl_memstore *ms);
/* The owner's direct API, "the user who edits desired state", under the
   same API-server rules as the transport (refusals fill *st, which may be
   NULL): apply creates or replaces (no resourceVersion precondition; a
   status in the document is kept on create, ignored on replace); delete
   honours finalizers; get reads one object. *out may be NULL for apply. [any thread] */
KCTL_API int kctl_memstore_apply(kctl_memstore *ms, const kctl_resource *res, const char *json, size_t len, kctl_obj **out,
                                 kctl_api_status *st);
KCTL_API int kctl_memstore_delete(kctl_memstore *ms, const kctl_resource *res, const char *name, kctl_api_status *st);
KCTL_API int kctl_memstore_get(kctl_memstore *ms, const kctl_resource *res, const char *name, kctl_obj **out, kctl_api_status *st);
/* The current revision (the last write's resourceVersion). */
KCTL_API uint64_t kctl_memstore_revision(kctl_memstore *ms);
/* What the store holds, against its bounds. */
typedef struct kctl_memstore_stats {
    size_t objects;         /* objects stored */
    size_t bytes;           /* their JSON documents' bytes (max_bytes counts these) */
    uint32_t history;       /* events the ring holds now */
    uint32_t history_cap;   /* events it has room for now (grows up to desc.history) */
    uint64_t refused_full;  /* writes refused with FULL (max_objects, max_bytes) */
} kctl_memstore_stats;
/* Fill *out (INVALID_ARG for NULL arguments). [any thread] */
KCTL_API int kctl_memstore_read_stats(kctl_memstore *ms, kctl_memstore_stats *out);
/* Forget the events up to rev: watches from before get GONE. */
KCTL_API int kctl_memstore_compact(kctl_memstore *ms, uint64_t rev);
/* Write the store to desc.path now, as a snapshot, and empty the journal
   (a compaction; INVALID_ARG without a path; IO: the store on disk is as
   it was). [any thread] */
KCTL_API int kctl_memstore_save(kctl_memstore *ms);
/* KCTL_MEMSTORE_SYNC_INTERVAL's timer, for a loop of your own: fsyncs the
   journal when records wait and sync_interval_ms has passed since the last
   fsync, and sets *next_ns (NULL: not wanted) to the store clock's time at
   which the next fsync is due, UINT64_MAX when nothing waits (or under
   another policy, or without save_on_write). Threaded builds on a
   real-time clock do this on a thread of the store's own; a store on a
   virtual clock, or under KCTL_NO_THREADS, syncs on time only if you call
   this by that deadline (a write past the interval syncs too). OK; IO (a
   failed fsync: the journal refuses writes until kctl_memstore_save
   succeeds); INVALID_ARG (NULL ms). [any thread] */
KCTL_API int kctl_memstore_flush(kctl_memstore *ms, uint64_t *next_ns);
/* Persistence's counters into *out. INVALID_ARG for NULL. [any thread] */
KCTL_API int kctl_memstore_read_persist_stats(kctl_memstore *ms, kctl_memstore_persist_stats *out);
/* Faults: the next n requests of verb fail with code; every watch opened
   from now on breaks (IO) after delivering n events (0: never).
   KCTL_NO_FAULTS: fail_next is UNSUPPORTED, the other two have no effect. */
KCTL_API int kctl_memstore_fail_next(kctl_memstore *ms, kctl_verb verb, uint32_t n, int code);
KCTL_API void kctl_memstore_break_watches_after(kctl_memstore *ms, uint32_t n);
/* Every request takes at least latency_ns of real time more (0: none), to
   test timeouts against a slow store. */
KCTL_API void kctl_memstore_set_latency(kctl_memstore *ms, uint64_t latency_ns);

/* ================================================== >>reflector REFLECTOR */
/* client-go's Reflector: list (following pages), replace the FIFO, then
   watch from the list's version; every event moves the last-seen version
   on (a BOOKMARK only moves it). A watch that breaks is opened again
   from the last-seen version, without a list, after a backoff (800 ms
   doubling to 30 s, jittered as client-go jitters it: up to as much
   again; back to 800 ms after 2 minutes of health). A watch the store
   ended cleanly (CLOSED: an API server's timeoutSeconds) is opened again
   at once, and is no error; unless it ended less than a second after it
   opened without an event (client-go's "very short watch"): then it
   backs off as a broken one. GONE (410) lists again. A paged list whose
   continue token expired between pages (GONE) is done again at once in
   one request without pages (client-go's pager, FullListIfExpired), and
   is no error. A watch with neither events nor bookmarks for stall_ns is
   reopened. An optional resync asks the FIFO for SYNC deltas of every
   cached object, without touching the store; as client-go's resync timer,
   the period counts from the end of a list: the first resync is due
   resync_ns after the list completes (a relist starts the count again),
   each next one resync_ns after the one before. Everything runs on the
   clock, so tests drive it with a virtual one.

   A failed attempt (a list or watch the store refused, or deltas the FIFO
   could not take for lack of memory) is counted in errors and its code
   kept in last_error until an attempt succeeds; the reflector backs off
   and tries again.

   kctl_reflector_step does what is due without blocking longer than
   wait_ns (0: not at all) and says when it wants to run again; an
   informer's thread calls it in a loop, a KCTL_NO_THREADS program from its
   main loop. */
typedef struct kctl_reflector kctl_reflector;

/* Options; zero means the default (in brackets):
     transport, resource, fifo   required; the resource's strings and the
                                 selectors are copied; the FIFO is not owned
     label_selector, field_selector  [everything]
     clock          [monotonic]
     page_size      objects per list page [500, client-go's; KCTL_NO_PAGING: 0 only]
     resync_ns      [0: no resync; KCTL_NO_RESYNC: 0 only]
     stall_ns       [5 minutes]
     backoff_initial_ns, backoff_max_ns, backoff_reset_ns  [800 ms, 30 s, 2 min]
     seed           for the jitter [0: one of its own, from the wall clock
                    and the reflector's address, so a fleet does not retry
                    in step; set one for runs that repeat exactly]
     allocator      [KCTL_MALLOC/KCTL_FREE]
     wake           [none] registered on every watch the reflector opens
                    (the transport's watch_notify): with it, an idle watch
                    asks for no step before its stall deadline (or the next
                    resync); without it (or a transport without the entry),
                    an idle watch asks to be polled every
                    KCTL_REFLECTOR_POLL_NS.
     logger         [silent] where a store found behind the last version
                    seen is told (REFLECTOR_STORE_BEHIND) */
#define KCTL_REFLECTOR_POLL_NS KCTL_SEC(1)
typedef struct kctl_reflector_desc {
    kctl_transport transport;
    kctl_resource resource;
    const char *label_selector;
    const char *field_selector;
    kctl_fifo *fifo;
    kctl_clock clock;
    uint32_t page_size;
    uint64_t resync_ns;
    uint64_t stall_ns;
    uint64_t backoff_initial_ns, backoff_max_ns, backoff_reset_ns;
    uint64_t seed;
    kctl_allocator allocator;
    kctl_wake wake;
    kctl_logger logger;
} kctl_reflector_desc;

/* The reflector's counters. */
typedef struct kctl_reflector_stats {
    uint64_t lists;          /* complete lists, the first included */
    uint64_t relists;        /* lists after the first (GONE) */
    uint64_t watch_restarts; /* watches opened again (broken, ended, stalled) */
    uint64_t errors;         /* failed requests */
    int last_error;          /* the last failed attempt's code (a kctl_result; NOMEM: the
                                FIFO, or an informer's cache, could not hold it); KCTL_OK
                                again once a list or a watch succeeds */
    uint64_t added, modified, deleted, bookmarks;
    char last_rv[KCTL_RV_MAX];
    uint64_t cache_full;       /* (informer) objects its cache refused (FULL: max_objects, max_bytes) */
    uint64_t transform_errors; /* (informer) objects its transform refused */
    uint64_t store_behind;     /* watches the store refused because it is older than the
                                  last version seen ("too large resource version": restored
                                  from an older snapshot, restarted without its history);
                                  each is followed by a list, after a backoff, never by a
                                  retry of the same version (client-go's reflector) */
} kctl_reflector_stats;

/* Create a reflector (it starts by listing at the first step). INVALID_ARG
   for a missing transport, resource or FIFO, or a malformed selector. [any thread] */
KCTL_API int kctl_reflector_create(const kctl_reflector_desc *desc, kctl_reflector **out);
/* Close its watch and free it (NULL is fine). [not thread-safe] */
KCTL_API void kctl_reflector_destroy(kctl_reflector *r);
/* Do what is due; wait at most wait_ns for watch events; *next_ns (may be
   NULL) gets the clock time it wants to be called again at the latest:
   now when work is left (its bound of 256 events per step was reached),
   else the earliest of the backoff's end, the watch's stall deadline
   (stall_ns after its last event), the next resync and, for a watch
   nobody wakes (no desc.wake, or a transport without watch_notify), now
   + KCTL_REFLECTOR_POLL_NS. Errors from the store are handled (backoff,
   relist) and counted; the result is OK, or SHUTDOWN once the FIFO is
   closed. [not thread-safe] */
KCTL_API int kctl_reflector_step(kctl_reflector *r, uint64_t wait_ns, uint64_t *next_ns);
/* Whether the first list has been handed to the FIFO. [not thread-safe] */
KCTL_API bool kctl_reflector_listed(const kctl_reflector *r);
/* Its counters. [not thread-safe] */
KCTL_API void kctl_reflector_read_stats(const kctl_reflector *r, kctl_reflector_stats *out);

/* ==================================================== >>informer INFORMER */
/* client-go's (shared) informer: a reflector feeding a delta FIFO, whose
   deltas update the indexer (the cache) and are told to event handlers:
   on_add, on_update(old, new), on_delete (with the last known object; NULL
   when even that is unknown, e.g. a deletion found by a relist of a key
   never cached). Handlers run on the informer's thread, in the order they
   were added, and must only enqueue keys; there may be any number of them
   (the list grows through the allocator). A handler added after the
   informer has started first receives the current contents as adds.
   has_synced turns true once the first list has been processed.

   Syncs. An update whose resourceVersion did not change is a sync, not a
   change: the periodic resync's SYNC deltas (resync_ns), and the objects
   a relist (after GONE) finds as the cache has them. As client-go's shared
   informer does, a sync goes only to the handlers that ask for syncs
   (kctl_handler.resync, client-go's handler resync period); the others
   hear of real changes only, so a relist after a broken link wakes no
   handler for objects that did not change, and one that changed is an
   update. A handler that asks gets the relists' syncs, and the periodic
   ones when the informer has a resync_ns. A controller's watches ask
   exactly when their informer has a resync_ns (controller-runtime's
   handlers take the informer's resync period). An object without a
   resourceVersion is never taken for a sync: nothing tells it apart.

   Out of memory: a delta the cache cannot take (NOMEM) stays queued and is
   retried at the next step; until the first list is wholly in the cache,
   has_synced stays false and wait_for_sync reports NOMEM (below).

   Budget: with max_objects or max_bytes, an object the cache refuses
   (FULL) is not cached and its handlers are not told (an update of a
   cached object keeps the version cached); it is logged
   (INFORMER_CACHE_FULL), counted (stats.cache_full, last_error FULL), and
   the reflector lists again after its backoff, as after a failed list
   (client-go's reflector on a store that refuses): the relist offers
   every object again, so one refused gets in once there is room (a
   delete, a smaller object), and is refused again, with the backoff
   growing to 30 s, while there is none. The first list counts as
   processed all the same: has_synced turns true on a partial cache.

   Transform (client-go's SetTransform): a function run on every object
   before it enters the cache, that returns it (a new reference) or a
   rewritten copy: the cache, the handlers and the events hold what it
   returns. kctl_transform_drop_managed_fields is one. It runs on the
   informer's thread, on adds, updates, syncs and deletions. NOMEM from it
   is retried as the cache's NOMEM; any other error drops the object as
   an undecodable one is dropped: not cached, handlers not told, logged
   (INFORMER_TRANSFORM_FAILED) and counted (stats.transform_errors); a
   deletion whose last state it refuses is still told, with the state
   untransformed. */
typedef struct kctl_informer kctl_informer;

/* Rewrite obj for the cache: *out = kctl_obj_ref(obj) to keep it as it
   is, or a new object (its key and resourceVersion unchanged). A non-OK
   result drops the object (see Transform above). [informer thread] */
typedef int (*kctl_transform_fn)(kctl_obj *obj, kctl_obj **out, void *user_data);

/* A transform that drops metadata.managedFields (the server-side apply
   bookkeeping, often half an object). user_data: the kctl_obj_opts the
   copy is made with (NULL: defaults; a codec decodes the copy again). An
   object without managedFields comes back as it is, allocating nothing.
   NOMEM; PROTO for an object that is not a JSON object. [any thread] */
KCTL_API int kctl_transform_drop_managed_fields(kctl_obj *obj, kctl_obj **out, void *user_data);

typedef struct kctl_handler {
    void (*on_add)(kctl_obj *obj, void *user_data);
    void (*on_update)(kctl_obj *old_obj, kctl_obj *new_obj, void *user_data);
    void (*on_delete)(const char *key, kctl_obj *last, bool final_state_unknown, void *user_data);
    void *user_data;
    bool resync; /* receive syncs as on_update(old, new) with the same resourceVersion (see above) */
} kctl_handler;

/* Options: what a reflector takes (see kctl_reflector_desc; the FIFO and
   the cache are the informer's own; wake as the reflector's), plus the
   allocator for both, the cache's bounds, a transform and a logger. */
typedef struct kctl_informer_desc {
    kctl_transport transport;
    kctl_resource resource;
    const char *label_selector;
    const char *field_selector;
    kctl_clock clock;
    uint64_t resync_ns;
    uint32_t page_size;
    uint64_t stall_ns;
    kctl_allocator allocator;
    uint64_t seed;
    uint32_t max_objects;    /* the cache's bounds (kctl_indexer_desc; 0: none; see Budget) */
    size_t max_bytes;
    kctl_transform_fn transform; /* NULL: objects cached as they come (see Transform; KCTL_NO_TRANSFORM: NULL only) */
    void *transform_user_data;
    kctl_logger logger;      /* silent */
    kctl_wake wake;
} kctl_informer_desc;

/* Create an informer (not started). [any thread] */
KCTL_API int kctl_informer_create(const kctl_informer_desc *desc, kctl_informer **out);
/* Stop it if running and free it (NULL is fine). [not thread-safe] */
KCTL_API void kctl_informer_destroy(kctl_informer *inf);
/* Add a handler (copied; any number: the list grows). After start it
   first gets the current contents as adds, on the informer's thread.
   INVALID_ARG for NULL arguments, NOMEM. [any thread] */
KCTL_API int kctl_informer_add_handler(kctl_informer *inf, const kctl_handler *h);
/* The cache (to read, and to add indexes to). [any thread] */
KCTL_API kctl_indexer *kctl_informer_indexer(kctl_informer *inf);
/* Whether the event a handler is being told comes in bulk from a list or
   a resync, not from a watch event: an object of the first list or of a
   relist (added, changed, unchanged, or a deletion it found), of a
   checkpoint's load, of the contents a handler added late is given, or
   a resync's sync. client-go's isInInitialList, widened to every list; a
   controller with kctl_controller_desc.priority queues these keys low.
   false outside a handler. [handler: the informer's thread] */
KCTL_API bool kctl_informer_event_from_list(kctl_informer *inf);
/* One round: the reflector's step (waiting at most wait_ns for events),
   then every queued delta processed. *next_ns as the reflector's (now
   when deltas are left, or a delta the cache could not take waits to be
   retried: then at the latest the reflector's initial backoff later). For
   KCTL_NO_THREADS programs and tests; do not mix with start. [not thread-safe] */
KCTL_API int kctl_informer_step(kctl_informer *inf, uint64_t wait_ns, uint64_t *next_ns);
/* Run it on a thread of its own until stop. [any thread] */
KCTL_API int kctl_informer_start(kctl_informer *inf);
/* Stop the thread and wait for it (handlers are not called afterwards). [any thread] */
KCTL_API void kctl_informer_stop(kctl_informer *inf);
/* Whether the first list has been processed. [any thread] */
KCTL_API bool kctl_informer_has_synced(kctl_informer *inf);
/* Wait (real time, at most timeout_ns) until the first list has been
   processed: OK. NOMEM at once when the informer ran out of memory before
   that (the list, the FIFO or the cache could not hold it; the cache
   would be partial): it backs off and tries again, so a later call may
   succeed (the code stays in the stats' last_error until an attempt
   succeeds). TIMEOUT otherwise. Under KCTL_NO_THREADS it does not wait.
   [any thread] */
KCTL_API int kctl_informer_wait_for_sync(kctl_informer *inf, uint64_t timeout_ns);
/* The reflector's counters; last_error also says NOMEM while a delta the
   cache could not take waits to be retried. [any thread] */
KCTL_API void kctl_informer_read_stats(kctl_informer *inf, kctl_reflector_stats *out);

/* ================================================ >>checkpoint CHECKPOINT */
/* An informer's checkpoint: its cache and the resourceVersion it has seen,
   kept on the device, so that a restart needs neither the store nor a
   relist (KubeEdge's and OpenYurt's node-local caches, for one informer).

       kctl_checkpoint_desc cd = kctl_checkpoint_desc_init();
       cd.path = "/data/kctl/devices.ckpt";   // or save_fn / load_fn
       cd.every_events = 100;                  // and/or every_ns
       rc = kctl_informer_set_checkpoint(inf, &cd);  // before the first step
       // OK: loaded; NOT_FOUND: none yet; PROTO or IO: discarded (logged)

   Start. set_checkpoint loads the checkpoint at once and hands its objects
   to the informer as a list would (the handlers get them as adds at the
   next step, and has_synced turns true when they are processed), without
   asking the store anything: reconciles run from the checkpoint while the
   store is unreachable. The reflector then watches from the saved
   version, and relists only if the store answers GONE (410: it compacted
   past it). That relist is an ordinary one (kctl_fifo_replace against the
   checkpointed cache): an object deleted while the device was down
   reaches on_delete with final_state_unknown true and the last object the
   checkpoint knew (client-go's DeletedFinalStateUnknown from Replace); one
   that changed is an update; one that did not is a sync (issue 8's rule).
   The resourceVersion is opaque: the memstore, etcd and Kubernetes
   transports alike.

   When a checkpoint is written: every every_events watch events (adds,
   updates, deletes; a list counts as reaching it; 0: not by count), every every_ns on the informer's
   clock (0: not by time), and when the informer stops (kctl_informer_stop,
   and so kctl_informer_destroy), each time only if the cache moved since
   the last one and only once every delta the reflector received is in the
   cache (the saved version always matches the saved objects). Both zero:
   on stop only (and kctl_informer_checkpoint_save). The informer's step
   writes it, on its own thread: a write costs one pass over the cache.

   Format (version 1, little-endian): "KCTLCKPT", u32 format version, u32
   flags (0), u64 payload length, u32 CRC-32 (IEEE) of the payload; the
   payload: the resourceVersion, the group, version, resource, namespace,
   label and field selector (each a u32 length and its bytes), a u32
   object count and the objects' JSON (each a u32 length and its bytes).
   Written atomically (a temporary file beside it, fsync, rename, fsync of
   the directory: a crash leaves the old checkpoint or the new one, whole).
   A checkpoint is discarded whole, never half-loaded, with a logged reason
   (and kctl_checkpoint_stats.discarded): a bad magic, a length that does
   not match the file (truncated), a bad checksum or a malformed payload
   (CHECKPOINT_CORRUPT), another format version (CHECKPOINT_OLD_FORMAT),
   another resource or selector (CHECKPOINT_MISMATCH), an object that does
   not parse (CHECKPOINT_CORRUPT). Without files (KCTL_NO_FILES) only the
   callbacks work (a path is INVALID_ARG); with neither, there is no
   checkpoint. */

/* Options; zero means the default:
     path          the checkpoint file (copied) [NULL: the callbacks]
     save_fn       store data[0..len) whole, replacing the previous one,
                   atomically (OK, or an error code: the save failed and is
                   tried again at the next trigger). Used when path is NULL.
     load_fn       give the last data saved: *data (the callback's; valid
                   until set_checkpoint returns) and *len; NOT_FOUND when
                   there is none. Used when path is NULL.
     user_data     for both callbacks
     every_events  [0: not by count]
     every_ns      [0: not by time]
     logger        where discarded checkpoints and failed saves are told [none]
     obj_opts      how loaded objects are made: give the transport's (its
                   codec decodes them as it decodes the store's) [defaults] */
typedef struct kctl_checkpoint_desc {
    const char *path;
    int (*save_fn)(const void *data, size_t len, void *user_data);
    int (*load_fn)(const void **data, size_t *len, void *user_data);
    void *user_data;
    uint32_t every_events;
    uint64_t every_ns;
    kctl_logger logger;
    kctl_obj_opts obj_opts;
} kctl_checkpoint_desc;

/* Counters of an informer's checkpoint. */
typedef struct kctl_checkpoint_stats {
    uint64_t loaded;      /* objects taken from the checkpoint at start */
    uint64_t saves;       /* checkpoints written */
    uint64_t save_errors; /* writes that failed (the old checkpoint stays) */
    uint64_t discarded;   /* checkpoints refused at load (0 or 1) */
    uint32_t discard_reason; /* a kctl_log_item (CHECKPOINT_*), 0 when none */
    int last_save_error;  /* the last failed write's code; OK after a good one */
    char loaded_rv[KCTL_RV_MAX]; /* the version the checkpoint was taken at ("" if none) */
} kctl_checkpoint_stats;

/* The defaults, filled. [any thread] */
KCTL_API kctl_checkpoint_desc kctl_checkpoint_desc_init(void);
/* Give inf a checkpoint (desc copied) and load it. Call before the first
   step or start. Returns: OK (loaded: the informer starts from it);
   NOT_FOUND (none yet: the informer lists); PROTO (discarded as corrupt,
   truncated, of another format, resource or selector: logged; the
   informer lists); IO (the file is there but cannot be read; the informer
   lists); in all of these the checkpoint is set up and written later.
   INVALID_ARG: NULL arguments, neither a path nor both callbacks, a path
   under KCTL_NO_FILES, or an informer already stepped or started; EXISTS:
   it has a checkpoint already; NOMEM. [not thread-safe] */
KCTL_API int kctl_informer_set_checkpoint(kctl_informer *inf, const kctl_checkpoint_desc *desc);
/* Write the checkpoint now (whatever the triggers; if the cache has not
   moved since the last write, nothing is written: OK). OK; AGAIN when
   deltas wait in the informer (step it, then save); INVALID_ARG without a
   checkpoint or before the first list or checkpoint; IO or the save_fn's
   code; NOMEM. [not thread-safe: the stepping thread, or after stop] */
KCTL_API int kctl_informer_checkpoint_save(kctl_informer *inf);
/* The checkpoint's counters (zeros without one). [not thread-safe: as save] */
KCTL_API void kctl_informer_checkpoint_stats(kctl_informer *inf, kctl_checkpoint_stats *out);

/* ================================================ >>limiter RATE LIMITERS */

/* A rate limiter decides how long a key waits before it is retried.
   Names mirror client-go's. Built-in limiters are [any thread]. */
typedef struct kctl_limiter kctl_limiter;

/* A limiter of your own: every entry is required except destroy; self is
   passed back to each. Must be safe to call from any thread. */
typedef struct kctl_limiter_vtable {
    uint64_t (*when)(void *self, const char *key);          /* delay in ns; consumes */
    void     (*forget)(void *self, const char *key);        /* clear the key's history */
    uint32_t (*num_requeues)(void *self, const char *key);  /* failures recorded */
    void     (*destroy)(void *self);                        /* optional */
} kctl_limiter_vtable;

/* Wrap a user limiter; the vtable is copied. NULL on bad vtable or no memory. [any thread] */
KCTL_API kctl_limiter *kctl_limiter_create(const kctl_limiter_vtable *vt, void *self);
/* Per key: delay base*2^failures capped at max; failures counted before the
   increment (base, 2*base, 4*base, ...). NULL if base 0 or max < base. [any thread] */
KCTL_API kctl_limiter *kctl_limiter_exponential(uint64_t base_ns, uint64_t max_ns);
/* One global token bucket (Go's rate.Limiter.Reserve): burst tokens at start,
   refilled at per_second; each call takes one and returns the wait until it
   exists. clock NULL = monotonic; copied. NULL if per_second <= 0 or burst 0. [any thread] */
KCTL_API kctl_limiter *kctl_limiter_bucket(const kctl_clock *clock, double per_second, uint32_t burst);
/* The same bucket in integer arithmetic (no floating point: the one that
   KCTL_NO_FLOAT builds have; there kctl_limiter_bucket returns NULL):
   tokens tokens every per_ns nanoseconds, exactly (10 per KCTL_SEC(1) is
   10/s; 1 per KCTL_MS(1500) is 2/3 per second), per_ns 0 = unlimited
   (rate.Inf). Waits are floor(deficit / rate) in whole nanoseconds, as
   the double bucket's (which also rounds its rate and tokens to 53 bits:
   the two agree to within 1 ns plus that rounding, a few ns per hour of
   deficit). NULL if tokens or burst is 0, or burst * per_ns > 2^62.
   [any thread] */
KCTL_API kctl_limiter *kctl_limiter_bucket_rate(const kctl_clock *clock, uint32_t tokens, uint64_t per_ns, uint32_t burst);
/* Per key: fast_ns for the first max_fast failures, then slow_ns.
   NULL if fast > slow. [any thread] */
KCTL_API kctl_limiter *kctl_limiter_fast_slow(uint64_t fast_ns, uint64_t slow_ns, uint32_t max_fast);
/* The maximum of n limiters (each one asked, each one consumes). Takes
   ownership of the n limiters even when it fails (it then destroys the
   non-NULL ones). NULL if n is 0 or a member is NULL. [any thread] */
KCTL_API kctl_limiter *kctl_limiter_max_of(kctl_limiter *const *limiters, size_t n);
/* client-go's default: max_of(exponential(5 ms, 1000 s), bucket(10/s, burst 100)),
   the bucket kctl_limiter_bucket_rate(clock, 10, KCTL_SEC(1), 100).
   clock NULL = monotonic. [any thread] */
KCTL_API kctl_limiter *kctl_limiter_default(const kctl_clock *clock);
/* Jitter over another limiter's delay, so that the retries of many keys
   (or of many devices that failed together) do not fire in the same
   instant: each delay d the inner limiter returns becomes
     KCTL_JITTER_FULL   uniform in [0, d]           (AWS's "full jitter")
     KCTL_JITTER_EQUAL  d/2 + uniform in [0, d/2]   (never less than half)
   num_requeues and forget are the inner limiter's. Jitter the per-key
   part only: max_of(jitter(exponential), bucket) keeps the bucket's
   rate exact. seed: the random sequence (a fixed seed repeats exactly,
   for tests; give each device its own, e.g. a hash of its name; 0: one
   from the clock and the limiter's address). Takes ownership of inner
   even when it fails (NULL for a NULL inner or an unknown mode, NOMEM).
   [any thread] */
#define KCTL_JITTER_FULL  1
#define KCTL_JITTER_EQUAL 2
KCTL_API kctl_limiter *kctl_limiter_jitter(kctl_limiter *inner, int mode, uint64_t seed);
/* How long key must wait now; records a failure. 0 for NULL arguments. [any thread] */
KCTL_API uint64_t kctl_limiter_when(kctl_limiter *l, const char *key);
/* Forget key's failures. [any thread] */
KCTL_API void kctl_limiter_forget(kctl_limiter *l, const char *key);
/* Failures recorded for key (max_of: the largest). [any thread] */
KCTL_API uint32_t kctl_limiter_num_requeues(kctl_limiter *l, const char *key);
/* Free a limiter (NULL is fine). Not for limiters owned by a queue or max_of. */
KCTL_API void kctl_limiter_destroy(kctl_limiter *l);
/* The same constructors with an allocator for everything the limiter
   allocates (itself, and the per-key failure records of exponential and
   fast_slow); a NULL a, or a zero one, is KCTL_MALLOC/KCTL_FREE; copied.
   The ones above are these with NULL. A queue or controller that makes
   its default limiter makes it with its own allocator. NULL as above, and
   for an allocator with one function only. [any thread] */
KCTL_API kctl_limiter *kctl_limiter_create_with(const kctl_limiter_vtable *vt, void *self, const kctl_allocator *a);
KCTL_API kctl_limiter *kctl_limiter_exponential_with(uint64_t base_ns, uint64_t max_ns, const kctl_allocator *a);
KCTL_API kctl_limiter *kctl_limiter_bucket_with(const kctl_clock *clock, double per_second, uint32_t burst,
                                                const kctl_allocator *a);
KCTL_API kctl_limiter *kctl_limiter_fast_slow_with(uint64_t fast_ns, uint64_t slow_ns, uint32_t max_fast,
                                                   const kctl_allocator *a);
KCTL_API kctl_limiter *kctl_limiter_max_of_with(kctl_limiter *const *limiters, size_t n, const kctl_allocator *a);
KCTL_API kctl_limiter *kctl_limiter_default_with(const kctl_clock *clock, const kctl_allocator *a);
KCTL_API kctl_limiter *kctl_limiter_jitter_with(kctl_limiter *inner, int mode, uint64_t seed, const kctl_allocator *a);
KCTL_API kctl_limiter *kctl_limiter_bucket_rate_with(const kctl_clock *clock, uint32_t tokens, uint64_t per_ns, uint32_t burst,
                                                     const kctl_allocator *a);

/* ===================================================== >>queue WORK QUEUE */

typedef struct kctl_queue kctl_queue;

/* What a plain add (kctl_queue_add, kctl_queue_add_low, add_after(key, 0))
   does to the key's pending add_after, kubernetes#112325 (the modes of
   the client-go proposal kubernetes#112328):
     KCTL_PENDING_KEEP    (0) client-go: the key is queued now and the
                          delayed add stays; at its time it adds the key
                          again, which runs it once more if it was handed
                          out meanwhile: two runs.
     KCTL_PENDING_CANCEL  the add removes the pending add_after (#112328's
                          PreemptWaiting): the key runs once, now. An
                          add_after of a key already waiting to be handed
                          out is kept, as with KEEP (it runs again then).
     KCTL_PENDING_MERGE   one pending run per key, at the earliest time
                          asked (controller-runtime's priority queue):
                          CANCEL, and besides, an add_after of a key that
                          waits to be handed out (at either priority, or
                          held back while it is processed) is dropped: the
                          key runs sooner anyway. A key being processed and
                          not added again is not waiting: its add_after (a
                          reconcile's requeue_after) is kept.
   Each costs O(log n) (the delay heap knows every key's place) and
   allocates nothing. kctl_queue_stats.cancelled_total counts the delayed
   adds removed or dropped. KCTL_NO_PENDING_MODES compiles CANCEL and
   MERGE out (a desc with one: UNSUPPORTED). */
typedef enum kctl_pending_mode {
    KCTL_PENDING_KEEP = 0,
    KCTL_PENDING_CANCEL,
    KCTL_PENDING_MERGE
} kctl_pending_mode;

/* Priority with aging (off by default: one FIFO, as client-go). With
   enabled, kctl_queue_add_low queues a key at low priority, for work that
   can wait (the adds of a list or a resync): low keys are handed out after
   the normal ones, in their own FIFO order, except that a low key that
   has waited aging_ns (since it became ready) is aged: while the oldest
   low key is aged and normal keys wait too, get alternates, one aged low
   key, one normal key. So a fresh edit queued behind 10,000 list events
   goes first and waits at most one aged low key per normal key ahead of
   it; a low key is handed out at the latest 2(k+1) hand-outs after it
   aged, k being the low keys ahead of it, however many normal keys come.
   A key is queued once: a normal add (add, a delayed add coming due) of a
   key queued low raises it to the end of the normal keys; a low add of a
   key already queued, at either priority, changes nothing. Zero means the
   default:
     enabled   false: kctl_queue_add_low is kctl_queue_add
     aging_ns  10 s
   KCTL_NO_QUEUE_PRIORITY compiles it out (enabled: UNSUPPORTED). */
typedef struct kctl_priority_desc {
    bool enabled;
    uint64_t aging_ns;
} kctl_priority_desc;

/* Queue options; zero means the default:
     name       ""               for metrics; copied (first 63 bytes). Only a
                                 named queue records durations (see stats)
     clock      monotonic        copied
     limiter    kctl_limiter_default(&clock); the queue owns it from
                kctl_queue_create on, even when create fails
     allocator  KCTL_MALLOC/KCTL_FREE
     logger     silent
     max_keys   0: no bound. N: the queue never holds more than N keys
                (KCTL_NO_QUEUE_BOUND: 0 only, UNSUPPORTED at create).
                A new key is let in only while the keys counted by role
                (waiting to be handed out, being processed, delayed; a key
                in two roles counts twice) are fewer than N. An add of a key the queue does not hold while it
                is full is refused with FULL, logged (QUEUE_FULL) and
                counted (kctl_queue_stats.refused_total); a key it holds is
                always accepted (de-duplication costs nothing), and no key
                it accepted is ever dropped. A level-based controller finds
                a refused key again at its informer's next resync or
                relist. Memory: see MEMORY in the doc block.
     pending_after  KCTL_PENDING_KEEP (client-go); see kctl_pending_mode
     priority   off (one FIFO); see kctl_priority_desc */
typedef struct kctl_queue_desc {
    const char    *name;
    kctl_clock     clock;
    kctl_limiter  *limiter;
    kctl_allocator allocator;
    kctl_logger    logger;
    uint32_t       max_keys;
    int            pending_after; /* kctl_pending_mode */
    kctl_priority_desc priority;
} kctl_queue_desc;

/* A histogram of durations in client-go's buckets: upper bounds 10 ns * 10^i
   (i = 0..11, that is 1e-8 s .. 1000 s). buckets[i] counts the durations in
   (bound i-1, bound i], not cumulative (one increment per observation);
   longer ones are only in count. Prometheus' cumulative buckets are the
   running sums, as kctl_manager_metrics writes them. */
#define KCTL_HIST_BUCKETS 12
typedef struct kctl_histogram {
    uint64_t count;
    uint64_t sum_ns;
    uint64_t buckets[KCTL_HIST_BUCKETS];
} kctl_histogram;

/* The upper bound of histogram bucket i in ns (UINT64_MAX past the last). [any thread] */
KCTL_API uint64_t kctl_histogram_bound_ns(int i);

/* A snapshot of a queue's figures, under client-go's metric names. The
   durations (queue_duration, work_duration, unfinished_work_ns,
   longest_running_ns) are recorded only by a named queue, as client-go
   records metrics only for named queues: they cost a clock read per add,
   get and done (and never under KCTL_NO_DURATIONS: they stay zero). The
   counters are always kept. */
typedef struct kctl_queue_stats {
    uint64_t depth;                     /* workqueue_depth: keys added and not yet handed out */
    uint64_t adds_total;                /* workqueue_adds_total */
    uint64_t retries_total;             /* workqueue_retries_total (every add_after / add_rate_limited) */
    kctl_histogram queue_duration;      /* workqueue_queue_duration_seconds: add -> get */
    kctl_histogram work_duration;       /* workqueue_work_duration_seconds: get -> done */
    uint64_t unfinished_work_ns;        /* workqueue_unfinished_work_seconds: sum of in-flight ages */
    uint64_t longest_running_ns;        /* workqueue_longest_running_processor_seconds */
    uint64_t processing;                /* keys handed out, not yet done */
    uint64_t delayed;                   /* keys waiting for their add_after time */
    uint32_t idle_workers;              /* threads parked in kctl_queue_get */
    const char *name;                   /* the queue's name */
    uint64_t refused_total;             /* adds refused with FULL (kctl_queue_desc.max_keys) */
    uint64_t low;                       /* of depth, keys ready at low priority (kctl_priority_desc) */
    uint64_t cancelled_total;           /* delayed adds removed or dropped (kctl_pending_mode) */
} kctl_queue_stats;

/* The desc with every default filled in (limiter stays NULL: create makes it). [any thread] */
KCTL_API kctl_queue_desc kctl_queue_desc_init(void);
/* Create a queue; desc may be NULL (all defaults). INVALID_ARG for a NULL
   out, an allocator with only one function or a pending_after that is no
   kctl_pending_mode; UNSUPPORTED for priority.enabled under
   KCTL_NO_QUEUE_PRIORITY, a pending_after but KEEP under
   KCTL_NO_PENDING_MODES; NOMEM. [any thread] */
KCTL_API int  kctl_queue_create(const kctl_queue_desc *desc, kctl_queue **out);
/* Free the queue, its keys and its limiter (NULL is fine). No thread may be
   using it: shut down and join workers first. [not thread-safe] */
KCTL_API void kctl_queue_destroy(kctl_queue *q);
/* Queue key unless it is already waiting; if it is being processed it is
   queued once at done. A key that waits on an add_after is queued now all
   the same, and (desc.pending_after KEEP, the default) its delayed entry
   stays, as in client-go's delaying queue: when its time comes the key is
   added again, which does nothing while the key still waits to be handed
   out, and otherwise queues it once more (at done, if it is being
   processed then): it is processed again. CANCEL and MERGE remove the
   delayed entry instead: one run (kctl_pending_mode). A key queued low
   is raised (kctl_priority_desc). INVALID_ARG
   for a NULL, empty or too long key; NOMEM; FULL when the queue holds
   max_keys keys and not this one (the key is not queued); SHUTDOWN after
   shutdown (the key is dropped). [any thread] */
KCTL_API int  kctl_queue_add(kctl_queue *q, const char *key);
/* add, at low priority (kctl_priority_desc), for work that can wait: the
   adds of a list, a relist or a resync. A key already queued keeps its
   place and its priority (a low add never lowers one); a key being
   processed is queued low at done, unless a normal add came meanwhile.
   A pending add_after as with add. Without desc.priority.enabled it is
   kctl_queue_add. Results as add. [any thread] */
KCTL_API int  kctl_queue_add_low(kctl_queue *q, const char *key);
/* add(key) once delay_ns has passed (0 = now). If key is already delayed,
   the earlier time wins. A key already queued or being processed is
   delayed all the same: the delayed add happens at its time, whatever
   became of the key meanwhile (see kctl_queue_add), except with
   desc.pending_after MERGE, where an add_after of a key waiting to be
   handed out is dropped (kctl_pending_mode). FULL as add (a key
   the queue holds is always delayed); SHUTDOWN after shutdown. [any thread] */
KCTL_API int  kctl_queue_add_after(kctl_queue *q, const char *key, uint64_t delay_ns);
/* add_after(key, the limiter's delay for key): the way to retry a failure. [any thread] */
KCTL_API int  kctl_queue_add_rate_limited(kctl_queue *q, const char *key);
/* The limiter forgets key's failures: call it when key succeeded. [any thread] */
KCTL_API void kctl_queue_forget(kctl_queue *q, const char *key);
/* How many failures the limiter has recorded for key. [any thread] */
KCTL_API uint32_t kctl_queue_num_requeues(kctl_queue *q, const char *key);
/* Wait for a ready key and hand it out; *key stays valid until done(key).
   SHUTDOWN once shut down and empty. Under KCTL_NO_THREADS it does not
   block (AGAIN when nothing is ready). [any thread] */
KCTL_API int  kctl_queue_get(kctl_queue *q, const char **key);
/* As get, but never blocks: AGAIN when nothing is ready. [any thread] */
KCTL_API int  kctl_queue_try_get(kctl_queue *q, const char **key);
/* Finish processing key (the pointer from get, or an equal string). If it was
   added meanwhile it is queued again now. A key not being processed is
   ignored (and logged); so is a key a controller's worker is processing
   (a controller's queue: its worker finishes it, and a done from
   elsewhere, a reconcile's of its own key say, would let a second worker
   take it meanwhile). [any thread] */
KCTL_API void kctl_queue_done(kctl_queue *q, const char *key);
/* Keys ready to be handed out now (delayed keys count once their time has
   come; keys held back while processing do not). [any thread] */
KCTL_API size_t kctl_queue_len(kctl_queue *q);
/* When the next key becomes ready on the queue's clock: 0 if one is ready
   now, UINT64_MAX if none is queued or delayed. For poll loops and
   simulations. [any thread] */
KCTL_API uint64_t kctl_queue_next_ready(kctl_queue *q);
/* Stop accepting keys: adds return SHUTDOWN, delayed keys are dropped,
   workers get the keys already queued, then SHUTDOWN. [any thread] */
KCTL_API void kctl_queue_shutdown(kctl_queue *q);
/* shutdown, then block until every handed-out key is done (under
   KCTL_NO_THREADS it does not wait). Call it from a thread that holds no key. [any thread] */
KCTL_API void kctl_queue_shutdown_with_drain(kctl_queue *q);
/* Whether shutdown has been called. [any thread] */
KCTL_API bool kctl_queue_shutting_down(kctl_queue *q);
/* Fill *out with the queue's figures (times on the queue's clock). It
   looks at each key in flight (depth counts those added again meanwhile),
   under the queue's lock: cheap while they are about as many as the
   workers. [any thread] */
KCTL_API int  kctl_queue_read_stats(kctl_queue *q, kctl_queue_stats *out);
#if defined(KCTL__SPIN_TEST) && !defined(KCTL_NO_THREADS) && (defined(__GNUC__) || defined(__clang__))
/* kctl's own tests only: what a controller worker calls between keys,
   done(done_key) (NULL: none) and try_get in one hold of the lock;
   *stopping: whether the queue was shutting down at the hand-out; owner
   (0: none) a worker's slot, 1 to n, once kctl__queue_owners_test(q, n)
   made n of them (INVALID_ARG if it made some before; NOMEM). */
KCTL_API int kctl__queue_done_get_test(kctl_queue *q, const char *done_key, const char **key, bool *stopping, uint32_t owner);
KCTL_API int kctl__queue_owners_test(kctl_queue *q, uint32_t n);
#endif

/* ================================================= >>predicate PREDICATES */
/* Filters on events before a key is queued, as controller-runtime's
   predicates: old is NULL for an add, new_obj NULL for a delete. The
   "changed" kinds pass adds and deletes and pass an update only when the
   thing changed; custom calls fn; AND, OR and NOT combine the predicates
   a and b point to (which must outlive the watch). */
typedef enum kctl_predicate_kind {
    KCTL_PRED_GENERATION_CHANGED = 1,
    KCTL_PRED_RESOURCE_VERSION_CHANGED,
    KCTL_PRED_LABELS_CHANGED,
    KCTL_PRED_ANNOTATIONS_CHANGED,
    KCTL_PRED_CUSTOM,
    KCTL_PRED_AND,
    KCTL_PRED_OR,
    KCTL_PRED_NOT
} kctl_predicate_kind;

typedef struct kctl_predicate {
    int kind; /* kctl_predicate_kind */
    bool (*fn)(const kctl_obj *old_obj, const kctl_obj *new_obj, void *user_data);
    void *user_data;
    const struct kctl_predicate *a, *b;
} kctl_predicate;

/* Whether the event passes p (NULL passes everything). [any thread] */
KCTL_API bool kctl_predicate_eval(const kctl_predicate *p, const kctl_obj *old_obj, const kctl_obj *new_obj);


/* ================================================ >>controller CONTROLLER */
/* The part a user writes against: one reconcile function, called with a
   key, returning a result; controller-runtime's rules decide what happens
   next (the first row that applies):
     error, terminal                      not retried; the failures stay
                                          counted (no forget)
     error (non-zero, whatever the code)  add_rate_limited: backoff. A
                                          requeue_after set with it is
                                          ignored (and a warning logged):
                                          this is the storm the toolkit
                                          exists to prevent
     requeue_after > 0, no error          forget, then add_after; with
                                          requeue set too, requeue_after wins
     requeue, no error                    add_rate_limited
     success (all zero)                   forget
   The stats count each reconcile once by its row, and every error in
   error, terminal ones included (controller-runtime's ReconcileErrors);
   terminal counts the terminal ones again (TerminalReconcileErrors).
   Workers (default 1; as many as asked for) run keys of different objects
   in parallel and one key never twice at once (the queue's guarantee).
   Watches: the primary resource (its own key), owned objects (their
   controller ownerReference of a group and kind, in the same namespace,
   names the owner's key) and any resource through a map function. Reads
   come from the informers' caches; the transport is there for direct
   reads and writes. */
typedef struct kctl_controller kctl_controller;

typedef struct kctl_reconcile_result {
    int error;                 /* 0: success; else a code (any non-zero counts) */
    bool terminal;             /* with an error: do not retry */
    bool requeue;              /* without an error: again, through the limiter */
    uint64_t requeue_after_ns; /* without an error: again after this long (wins over requeue) */
} kctl_reconcile_result;

/* What reconcile gets; every pointer is valid during the call only. */
typedef struct kctl_reconcile_ctx {
    kctl_controller *controller;
    const char *key;           /* "namespace/name", or "name" when cluster-scoped */
    const char *ns;            /* the key's namespace ("" when cluster-scoped) and name, as */
    const char *name;          /* kctl_key_split gives them, on delete too (a key added by
                                  hand that does not split: ns "", name the whole key) */
    kctl_obj *obj;             /* the primary object from the cache (NULL: gone) */
    kctl_indexer *cache;       /* the primary informer's cache */
    kctl_transport transport;  /* for direct reads and writes */
    void *user_data;
} kctl_reconcile_ctx;

typedef kctl_reconcile_result (*kctl_reconcile_fn)(const kctl_reconcile_ctx *ctx);

/* Connectivity-aware retries, for devices that lose their store for
   minutes or hours (off by default: client-go's rules above apply). A
   reconcile that fails with a code that says the store is unreachable
   (IO, TIMEOUT, or AGAIN: the transports' 429 and 503) does not go
   through the limiter: its key is parked, its failure count untouched (no
   16-minute backoff earned while offline), and the controller is offline.
   While offline, keys still run as their events come (a reconcile that
   does not need the store still works; one that fails so is parked too),
   and one parked key at a time is retried as a probe: the first after a
   delay drawn in [d/2, d] for d = probe_min_ns, each failed probe
   doubling d up to probe_max_ns (so a fleet that lost its store together
   probes apart, at an ever slower rate). The probe that comes back with
   anything else (success, or another error, which then follows the rules
   above) ends the outage: every parked key is released through a
   jittered ramp, each added after a delay uniform in [0, ramp_ns), not all
   at once. Parked keys are dropped at stop, as queued ones are. Options;
   zero means the default:
     enabled       false
     probe_min_ns  1 s
     probe_max_ns  300 s: the longest a device takes to notice that its
                   store is back; raise it for larger fleets
     ramp_ns       10 s
     seed          the jitter's [0: from the clock and the controller's
                   address; give each device its own for reproducible runs]
   KCTL_NO_OFFLINE compiles it out (enabled: UNSUPPORTED). */
typedef struct kctl_offline_desc {
    bool enabled;
    uint64_t probe_min_ns, probe_max_ns, ramp_ns;
    uint64_t seed;
} kctl_offline_desc;

/* A hot-loop detector: a key reconciled more than max times within
   window_ns while its object's generation did not change (no new spec:
   the reconcile keeps waking itself, e.g. through a status write without a
   generation predicate, or a requeue that never ends) is logged
   (CONTROLLER_HOT_LOOP), counted (stats.hot_loops) and slowed: it does not
   run again before slow_ns has passed, whatever wakes it. Zero means the
   default: max 0 (off), window_ns 60 s, slow_ns 30 s. KCTL_NO_HOT_LOOP
   compiles it out (max: UNSUPPORTED). */
typedef struct kctl_hot_loop_desc {
    uint32_t max;
    uint64_t window_ns, slow_ns;
} kctl_hot_loop_desc;

/* Options; zero means the default:
     name       "" (a name turns on the queue's duration metrics)
     primary    the informer of the reconciled resource (required; not owned)
     transport  what ctx->transport gives reconcilers
     reconcile  required
     predicate  for the primary's events (NULL: all; copied; UNSUPPORTED
                under KCTL_NO_PREDICATES)
     workers    1; any number (their threads' table is allocated at create:
                NOMEM; a thread the system cannot start fails start)
     limiter    kctl_limiter_default (owned from create on, even if it fails)
     max_keys   the queue's bound (kctl_queue_desc.max_keys; 0: none): a
                key refused while it is full is found again at the
                informer's next resync or relist (give the informer a
                resync_ns when you bound the queue)
     clock, logger, allocator
     offline    connectivity-aware retries: off (client-go's behaviour); see
                kctl_offline_desc
     hold_backoff  false (client-go): an event for a key that waits out an
                error's backoff runs it at once (and a failure there counts
                again: kubernetes#132805). true: the key keeps its backoff;
                the event's run happens when the backoff ends, once
                (KCTL_NO_HOLD_BACKOFF: true is UNSUPPORTED)
     hot_loop   off: see kctl_hot_loop_desc
     pending_after  KCTL_PENDING_KEEP (client-go): what an event does to
                the key's pending add_after (a requeue_after, an error's
                retry, an offline release); see kctl_pending_mode and, with
                hold_backoff, below
     priority   off (client-go: one FIFO). enabled: the events of a list
                (the first, a relist, a checkpoint's load, the contents a
                watch added late is given) and of a resync are queued at
                low priority, watch events at normal priority
                (kctl_informer_event_from_list), aged as kctl_priority_desc
                says: the edits of users go first and nothing starves
   hold_backoff and hot_loop keep a small record per key reconciled (its
   key, about 48 bytes more), dropped when the object is gone.
   hold_backoff and pending_after: hold_backoff decides when a key in
   backoff may run, pending_after how many runs an event and a pending
   retry make. KEEP: the event queues the key now and the retry stays; with
   hold_backoff the key, handed out early, is put back to its backoff's
   end (one run, then), without it runs now and again at the retry (two
   runs, a failure in the first counted: kubernetes#132805). CANCEL and
   MERGE: the event removes the retry and queues the key now; with
   hold_backoff it is put back to its backoff's end all the same (one run,
   then, the failures unchanged); without, it runs now and not again at the
   old retry's time (one run, now; a failure in it backs off from there). */
typedef struct kctl_controller_desc {
    const char *name;
    kctl_informer *primary;
    const kctl_predicate *predicate;
    kctl_transport transport;
    kctl_reconcile_fn reconcile;
    void *user_data;
    uint32_t workers;
    kctl_limiter *limiter;
    kctl_clock clock;
    kctl_logger logger;
    kctl_allocator allocator;
    kctl_offline_desc offline;
    bool hold_backoff;
    kctl_hot_loop_desc hot_loop;
    uint32_t max_keys;
    int pending_after;            /* kctl_pending_mode */
    kctl_priority_desc priority;
} kctl_controller_desc;

/* Reconciles so far, by what they returned (see the rules above). */
typedef struct kctl_controller_stats {
    uint64_t success;
    uint64_t error;         /* every error, terminal ones included */
    uint64_t terminal;      /* the terminal errors (also counted in error) */
    uint64_t requeue, requeue_after;
    uint64_t parked;        /* offline mode: failures that parked their key (also counted in error) */
    uint64_t probes;        /* offline mode: probes run */
    uint64_t outages;       /* offline mode: times the controller went offline */
    uint32_t parked_now;    /* offline mode: keys parked now */
    uint64_t held;          /* hold_backoff, hot_loop: runs put off to the key's not-before time */
    uint64_t hot_loops;     /* hot_loop: times a key was found looping */
    bool offline;           /* offline mode: the store is unreachable now */
    kctl_histogram reconcile_time; /* time per reconcile on the clock, in client-go's buckets (the manager's metric uses controller-runtime's); zero under KCTL_NO_DURATIONS */
} kctl_controller_stats;

/* Map an object of a watched resource to the keys to reconcile (emit each). */
typedef void (*kctl_map_fn)(const kctl_obj *obj, kctl_index_emit emit, void *emit_ctx, void *user_data);

/* Create a controller and watch desc->primary. INVALID_ARG for a missing
   primary or reconcile, a lone allocator function or a pending_after that
   is no kctl_pending_mode; UNSUPPORTED for an option whose part a trim
   switch compiled out (offline, hold_backoff, hot_loop, priority,
   pending_after: COMPILE-TIME OPTIONS); NOMEM. [any thread] */
KCTL_API int kctl_controller_create(const kctl_controller_desc *desc, kctl_controller **out);
/* Stop it if running and free it (NULL is fine). Its handlers stay on the
   informers it watches: stop or destroy those informers first. [not thread-safe] */
KCTL_API void kctl_controller_destroy(kctl_controller *c);
/* Reconcile the owners of objects of inf, as controller-runtime's Owns
   (EnqueueRequestForOwner with OnlyControllerOwner): for an event that
   passes pred (NULL: all; the struct is copied), the object's controller
   ownerReference (controller: true), if its kind is owner_kind and the
   group of its apiVersion is owner_group ("apps/v1": "apps"; "v1" or none:
   the core group ""; the version is ignored), names the key to reconcile,
   in the object's namespace. owner_group NULL or "" is the core group.
   Other owners, and a cluster-scoped owner of namespaced objects, need
   watch_map. INVALID_ARG for NULL c or inf, or an empty owner_kind; NOMEM;
   UNSUPPORTED for a pred under KCTL_NO_PREDICATES. [any thread] */
KCTL_API int kctl_controller_watch_owned(kctl_controller *c, kctl_informer *inf, const char *owner_group,
                                         const char *owner_kind, const kctl_predicate *pred);
/* Reconcile the keys map gives for objects of inf, for events that pass
   pred. map (and a predicate's function) runs on the informer's thread
   with the cache unlocked, and may read it; it may find the cache ahead
   of the event it is told of (a later event's object already in), as a
   client-go listener may. INVALID_ARG for NULL c, inf or map; NOMEM;
   UNSUPPORTED for a pred under KCTL_NO_PREDICATES. [any thread] */
KCTL_API int kctl_controller_watch_map(kctl_controller *c, kctl_informer *inf, kctl_map_fn map, void *user_data, const kctl_predicate *pred);
/* Reconcile up to max keys that are ready now, on this thread; *done
   (may be NULL) gets how many. For poll loops and tests. [not thread-safe] */
KCTL_API int kctl_controller_step(kctl_controller *c, size_t max, size_t *done);
/* The single-threaded loop of a controller alone (see THE STEP LOOP):
   step every informer it watches (kctl_informer_step, no waiting: what
   their transports have ready), then, once all of them have synced,
   reconcile up to budget keys that are ready now (budget counts
   reconciles; 0: none, intake only). *next_deadline (may be NULL) gets
   the clock time (the controller's clock, which should be its
   informers') when something is next due: now when ready keys are left,
   else the earliest of the queue's next ready key (add_after,
   rate-limited retries), every informer's deadline (resync, backoff,
   stall, poll) and, after a burst grew the queue's key table, when it
   may be given back (a second later: that poll shrinks it);
   UINT64_MAX: nothing is due. OK; SHUTDOWN once the
   controller is stopped; EXISTS while it runs on threads (start);
   INVALID_ARG for a NULL c. [not thread-safe; not with start] */
KCTL_API int kctl_controller_poll(kctl_controller *c, size_t budget, uint64_t *next_deadline);
/* Start the workers once every watched informer has synced, waiting at
   most sync_timeout_ns for each: the informer's wait_for_sync result
   (TIMEOUT; NOMEM when one ran out of memory during its first list) ends
   it, with nothing started (start may be called again). A thread the
   system cannot start: NOMEM, and the controller stops (as stop). EXISTS
   when running; SHUTDOWN after stop. [any thread] */
KCTL_API int kctl_controller_start(kctl_controller *c, uint64_t sync_timeout_ns);
/* Stop: the queue takes no more keys, keys not yet begun are dropped (a
   level-based controller reconciles them again on its next start, from a
   fresh list), reconciles in flight finish, and the workers are joined.
   A controller runs once: start after stop is SHUTDOWN. [any thread] */
KCTL_API void kctl_controller_stop(kctl_controller *c);
/* The same, waiting at most timeout_ns of real time (UINT64_MAX: no
   bound) for reconciles in flight: TIMEOUT if some are still running
   then. They go on to the end of their reconcile; a later stop, or
   destroy, waits for them and joins their threads. [any thread] */
KCTL_API int kctl_controller_stop_timeout(kctl_controller *c, uint64_t timeout_ns);
/* The controller's queue (for metrics, or to add keys by hand; its
   workers finish their keys themselves: kctl_queue_done of one is
   refused). [any thread] */
KCTL_API kctl_queue *kctl_controller_queue(kctl_controller *c);
/* A snapshot of its counters (zeros for NULL c). [any thread] */
KCTL_API void kctl_controller_read_stats(kctl_controller *c, kctl_controller_stats *out);

/* =============================================== >>leader LEADER ELECTION */
/* client-go's leader election (tools/leaderelection over a LeaseLock) on
   the transport alone: a coordination.k8s.io/v1 Lease whose spec holds the
   election record (holderIdentity, leaseDurationSeconds, acquireTime,
   renewTime, leaseTransitions), created and updated with resourceVersion
   preconditions, so it works on any store that honours them and beside
   client-go candidates sharing the Lease on an API server.

   Expiry. As client-go does, a candidate judges the lease by its own
   clock: it notes when it saw the record change, and the lease is free
   once the record's own leaseDurationSeconds (the holder's setting, not
   the candidate's) has passed since then without a change, or at once when
   holderIdentity is empty. The times written in the Lease are never
   compared across processes, so clock skew cannot make two leaders. A
   Lease that cannot be read (malformed JSON, a record field of the wrong
   type or out of range, a time that is not RFC 3339, no memory to parse
   it) is never free: the candidate does not take it over.

   Writing. A renewal or a takeover writes back the Lease it read with only
   the record's five fields in spec changed and its resourceVersion as the
   precondition: labels, annotations, ownerReferences, managedFields and
   any other field stay as they were, as client-go updates the object it
   read. leaseDurationSeconds is lease_ns in whole seconds, rounded up.
   acquireTime and renewTime are metav1.MicroTime: RFC 3339, UTC, exactly
   six fractional digits (2026-11-30T18:47:33.123456Z); they are read
   leniently (no fraction or 1 to 9 digits, Z or a +hh:mm offset). They
   come from the elector's clock, as client-go's come from its clock's
   Now(): on the monotonic clock (the default) they are the system's wall
   time at each write; on any other clock (a virtual one), the system's
   wall time read at create plus the clock's time elapsed since create, so
   a virtual minute of renewals is a minute apart in the Lease.

   Timing, as client-go's. A candidate tries every retry_ns, jittered:
   each wait is retry_ns * (1 + r * KCTL_LEADER_JITTER), r uniform in
   [0, 1) (wait.JitterUntil with JitterFactor 1.2), so candidates do not
   try in step. A leader renews every retry_ns: first optimistically, an
   update of the Lease it last wrote without reading it (client-go's fast
   path), and on failure by reading it first. It stops leading when
   renew_deadline_ns passes without a successful renewal (counted from the
   last success, where client-go counts from the first failed try, up to a
   retry later: so it always stops before another candidate can see the
   lease expire, renew_deadline_ns < lease_ns), and at once when it reads
   the Lease held by another (client-go waits for the deadline). create refuses what client-go refuses:
   lease_ns <= renew_deadline_ns or renew_deadline_ns <= 1.2 * retry_ns.

   Release (client-go's ReleaseOnCancel): kctl_leader_release writes the
   record client-go's release writes (holderIdentity "",
   leaseDurationSeconds 1, acquireTime and renewTime now, leaseTransitions
   kept), so a successor takes over at its next try instead of a lease
   duration later. Only release once everything the lease guards has
   stopped. */
typedef struct kctl_leader kctl_leader;

#define KCTL_LEADER_LEASE_NS          KCTL_SEC(15) /* client-go's defaults */
#define KCTL_LEADER_RENEW_DEADLINE_NS KCTL_SEC(10)
#define KCTL_LEADER_RETRY_NS          KCTL_SEC(2)
#define KCTL_LEADER_JITTER            1.2          /* client-go's JitterFactor */

/* Options; zero means the default:
     transport, name, identity   required (identity: unique per process)
     lease          the lease's resource [coordination.k8s.io/v1 leases,
                    namespace "default"]
     lease_ns, renew_deadline_ns, retry_ns  [KCTL_LEADER_LEASE_NS (15 s),
                    KCTL_LEADER_RENEW_DEADLINE_NS (10 s), KCTL_LEADER_RETRY_NS (2 s)]
     clock          [monotonic]
     allocator      [KCTL_MALLOC/KCTL_FREE]
     seed           for the jitter [0: a hash of identity, so candidates differ]
   The strings are copied. */
typedef struct kctl_leader_desc {
    kctl_transport transport;
    kctl_resource lease;
    const char *name;
    const char *identity;
    uint64_t lease_ns, renew_deadline_ns, retry_ns;
    kctl_clock clock;
    kctl_allocator allocator;
    uint64_t seed;
} kctl_leader_desc;

/* Create an elector (it does nothing until its first step). INVALID_ARG:
   no transport, name or identity, one allocator function without the
   other, or durations client-go refuses (see above); NOMEM. [any thread] */
KCTL_API int kctl_leader_create(const kctl_leader_desc *desc, kctl_leader **out);
/* Free it (NULL is fine); the Lease is left as it is (release first to
   hand it over). [not thread-safe] */
KCTL_API void kctl_leader_destroy(kctl_leader *le);
/* One try to acquire or renew the Lease; call it again at *next_ns (on
   the elector's clock: retry_ns later while leading, a jittered retry
   while not). *leading (may be NULL): whether this process leads now.
   Returns OK when the try went through, led or not (the Lease held by
   another alive is OK, not leading); else what stopped it: the store's
   code (IO, CONFLICT: another wrote first, ...), PROTO (the Lease cannot
   be read: not taken over), NOMEM; *leading and *next_ns are set either
   way. INVALID_ARG for a NULL le. [not thread-safe] */
KCTL_API int kctl_leader_step(kctl_leader *le, bool *leading, uint64_t *next_ns);
/* Give the Lease up, if this process leads (as of its last step): read it
   and, if it still names this process, write the released record (see
   above; a CONFLICT is retried twice with a fresh read). Afterwards this
   process does not lead, whatever the result. OK: released, or nothing to
   release (not leading, the Lease gone or held by another); else the
   store's code, PROTO (unreadable) or NOMEM, and the Lease expires as it
   would have. Call it only once whatever the lease guards has stopped.
   INVALID_ARG for NULL. [not thread-safe] */
KCTL_API int kctl_leader_release(kctl_leader *le);
/* Whether this process leads (as of the last step). [not thread-safe] */
KCTL_API bool kctl_leader_is_leader(const kctl_leader *le);
/* Times leadership was gained. [not thread-safe] */
KCTL_API uint32_t kctl_leader_terms(const kctl_leader *le);

/* ====================================================== >>manager MANAGER */
/* controller-runtime's manager: informers and controllers run together.
   One informer per resource, namespace and selectors, shared by every
   controller that asks for it (one watch, one cache); start starts the
   informers, waits for their caches, then starts the controllers; stop
   drains the controllers, then stops the informers;
   kctl_manager_run_until_signal does both around SIGINT/SIGTERM. Metrics
   for all of it in Prometheus' text format. The manager owns what it
   made. Its lists of informers and controllers grow through the allocator:
   there is no fixed number of either.

   Leader election, with a lease_name and this process' identity: the
   controllers run only while this process holds the Lease (informers run
   on every replica, as controller-runtime's caches do); losing it stops
   them for good (run returns SHUTDOWN), as controller-runtime exits. The
   election is kctl_leader's (client-go's, see LEADER ELECTION: jittered
   tries, expiry by the holder's own lease duration, MicroTime times from
   the manager's clock, a Lease shared with client-go candidates) on the
   manager's clock, in a thread of its own. On stop the Lease is still
   renewed while the controllers drain; then the election stops and, with
   release_on_stop (controller-runtime's LeaderElectionReleaseOnCancel, off
   by default as there), the Lease is released so that another replica
   takes over at its next try instead of a lease duration later. It is
   released only when every reconcile ended within the grace period: one
   still running keeps the Lease until it expires. */
typedef struct kctl_manager kctl_manager;

#define KCTL_MANAGER_GRACEFUL_TIMEOUT_NS KCTL_SEC(30)  /* controller-runtime's */
#define KCTL_MANAGER_CACHE_SYNC_TIMEOUT_NS KCTL_SEC(120) /* controller-runtime's CacheSyncTimeout */

/* Options; zero means the default:
     transport            required
     clock                [monotonic]
     resync_ns            for its informers [0: none]
     allocator, logger
     lease_name, identity leader election: both, or neither (none)
     lease_namespace      ["default"]
     lease_ns, renew_deadline_ns, retry_ns  [15 s, 10 s, 2 s: KCTL_LEADER_*]
     graceful_timeout_ns  how long stop waits for reconciles in flight
                          [KCTL_MANAGER_GRACEFUL_TIMEOUT_NS, 30 s; UINT64_MAX:
                          no bound]; real time whatever the clock (the
                          thread that moves a virtual clock is usually the
                          one that stops)
     release_on_stop      release the Lease on a clean stop [false]
     cache_sync_timeout_ns  how long start waits for the caches to sync
                          before it gives up with TIMEOUT, real time
                          [KCTL_MANAGER_CACHE_SYNC_TIMEOUT_NS, 2 min]. Not
                          how long the manager runs: it runs until stop
                          (or a signal, with kctl_manager_run_until_signal).
     wake                 [none] for kctl_manager_step: given to every
                          informer the manager makes, so a transport with
                          watch_notify (the memstore) wakes the program
                          when a watched resource changes (see THE STEP LOOP). */
typedef struct kctl_manager_desc {
    kctl_transport transport;
    kctl_clock clock;
    uint64_t resync_ns;
    kctl_allocator allocator;
    kctl_logger logger;
    const char *lease_name;
    const char *identity;
    const char *lease_namespace;
    uint64_t lease_ns, renew_deadline_ns, retry_ns;
    uint64_t graceful_timeout_ns;
    bool release_on_stop;
    uint64_t cache_sync_timeout_ns;
    kctl_wake wake;
} kctl_manager_desc;

/* Leader election as the manager's thread last saw it. */
typedef struct kctl_manager_leader_info {
    bool leading, lost; /* leads now; led and lost the lease */
    uint32_t terms;     /* times it gained the lease */
    uint64_t steps;     /* tries to acquire or renew so far */
    uint64_t next_ns;   /* when the next try is due, on the manager's clock */
} kctl_manager_leader_info;

/* Create a manager. INVALID_ARG: no transport, one allocator function
   without the other, a lease_name without an identity, or lease durations
   kctl_leader_create refuses; NOMEM. [any thread] */
KCTL_API int kctl_manager_create(const kctl_manager_desc *desc, kctl_manager **out);
/* Stop and free everything the manager made (NULL is fine). [not thread-safe] */
KCTL_API void kctl_manager_destroy(kctl_manager *m);
/* The informer for res and the selectors: the same one each time they are
   the same. Handlers and indexes may be added to it. One made while the
   manager runs starts at once. INVALID_ARG, NOMEM. [any thread] */
KCTL_API int kctl_manager_informer(kctl_manager *m, const kctl_resource *res, const char *label_selector,
                                   const char *field_selector, kctl_informer **out);
/* A controller (desc as for kctl_controller_create; its transport, clock
   and logger default to the manager's). The manager owns it. A name names
   its metrics and must be unique in the manager (EXISTS otherwise, as
   controller-runtime refuses a second controller of one name); a
   controller without a name has no metrics of its own (as client-go
   records none for an unnamed queue). One added while the controllers
   run starts at once (waiting for its caches as start does; its error is
   returned, the controller stays). INVALID_ARG, NOMEM, EXISTS. [any thread] */
KCTL_API int kctl_manager_add_controller(kctl_manager *m, const kctl_controller_desc *desc, kctl_controller **out);
/* Start the informers, wait for their caches (at most
   cache_sync_timeout_ns of real time, 0: the desc's: TIMEOUT), start the
   controllers, and return: they run on their own threads until stop. A
   manager runs once: its controllers cannot start again after a stop
   (SHUTDOWN). The program's own threads may go on using the store, the
   caches and everything else meanwhile:

       kctl_manager_start(m, 0);                              // 0: desc.cache_sync_timeout_ns
       kctl_memstore_apply(store, &apps, doc, KCTL_NTS, NULL, NULL); // the controllers see it
       ...
       kctl_manager_stop(m);                                  // drains, then returns
   EXISTS when started already, or once stepped (kctl_manager_step: the
   program's loop runs it). Under KCTL_NO_THREADS: INVALID_ARG (step it).
   [any thread] */
KCTL_API int kctl_manager_start(kctl_manager *m, uint64_t cache_sync_timeout_ns);
/* Stop gracefully: the controllers first (no new keys; reconciles in
   flight finish, while the Lease is still renewed), then leader election
   (with desc.release_on_stop, the Lease is released if every reconcile
   ended), then the informers. TIMEOUT when reconciles were still running
   at the end of the grace period (desc.graceful_timeout_ns, one period for
   all): they run to their end, destroy waits for them, and the Lease is
   not released. [any thread] */
KCTL_API int kctl_manager_stop(kctl_manager *m);
/* The single-threaded manager: one bounded round of everything, on the
   caller's thread, for a program that drives the manager from its own
   loop instead of start (with or without KCTL_NO_THREADS):
     1. leader election, when configured and due (kctl_leader_step): the
        controllers reconcile only while this process leads; losing the
        Lease stops them for good: SHUTDOWN, now and at every later step;
     2. every informer the manager made (kctl_manager_informer) steps
        (kctl_informer_step with no waiting: what each transport has ready
        now, the deltas into the caches and the handlers, lists, relists,
        resyncs and backoffs as they fall due; an informer of the program's
        own that a controller watches is the program's to step);
     3. every controller whose informers have all synced reconciles the
        keys ready now, up to budget reconciles in all (0: none; the
        controllers take turns from step to step).
   budget counts reconciles only; the intake of one informer is bounded by
   its reflector (256 watch events per step, or one list). Whatever is left
   is due at once. *next_deadline (may be NULL) gets the clock time (the
   manager's clock) at which the next thing falls due: now when work is
   left; else the earliest of each queue's next ready key (add_after,
   requeue_after, rate-limited retries), each informer's resync, backoff
   end, watch stall deadline and (for a transport without watch_notify, or
   no desc.wake) poll time, the lease's next renewal or try, and when a
   queue's key table that a burst grew may be given back (once, a second
   after it grew).
   UINT64_MAX: nothing is due at all. Sleep until then, or until
   desc.wake's fn is called (a watched resource changed), or until the
   program itself adds a key, whichever comes first; then step again.
   OK; SHUTDOWN when the lease was lost (with leader election), or after
   stop; EXISTS when the manager was started (its threads run it);
   INVALID_ARG for a NULL m. A manager that has been stepped cannot be
   started; stop and destroy end it as usual (stop releases the Lease
   with release_on_stop). [not thread-safe: one thread steps; the others
   may use the store, the caches and add keys] */
KCTL_API int kctl_manager_step(kctl_manager *m, size_t budget, uint64_t *next_deadline);
/* With leader election: whether this process leads now, and whether it
   led and lost the lease (then its controllers are stopped). [any thread] */
KCTL_API bool kctl_manager_is_leader(kctl_manager *m);
KCTL_API bool kctl_manager_lost_lease(kctl_manager *m);
/* The same and more, at once (all zero without leader election). [any thread] */
KCTL_API void kctl_manager_read_leader(kctl_manager *m, kctl_manager_leader_info *out);
/* Run until SIGINT or SIGTERM: start (waiting desc.cache_sync_timeout_ns
   for the caches), wait for the signal, stop. Returns what start
   returned, else SHUTDOWN when the lease was lost, else what stop
   returned. Call it from the main thread before other threads exist: it
   blocks those signals for every thread it starts. A program that has
   work of its own on the main thread uses start and stop instead.
   INVALID_ARG under KCTL_NO_THREADS and KCTL_PORT_CUSTOM (no signals
   there: use start and stop). [main thread] */
KCTL_API int kctl_manager_run_until_signal(kctl_manager *m);
/* kctl_manager_run_until_signal with this cache-sync timeout (0: the
   desc's). The argument is NOT how long it runs: it runs until SIGINT or
   SIGTERM. Kept for programs written against 0.3; prefer
   kctl_manager_run_until_signal. [main thread] */
KCTL_API int kctl_manager_run(kctl_manager *m, uint64_t cache_sync_timeout_ns);
/* The metrics in Prometheus' text exposition format (0.0.4) into
   buf[0..cap) (NUL-terminated): each family once, its # HELP and # TYPE
   lines right before its samples, all its samples together; histograms
   with cumulative buckets in increasing le order ending at +Inf (equal to
   _count), then _sum and _count; label values escaped (\\, \", \n).
   Families (those with no sample left out):
     workqueue_depth, _adds_total, _retries_total, _queue_duration_seconds,
     _work_duration_seconds, _unfinished_work_seconds,
     _longest_running_processor_seconds{name}       client-go's, per named controller
     workqueue_refused_total{name}                  keys a full queue refused (max_keys)
     kctl_workqueue_low_depth{name}                 of depth, keys at low priority
     kctl_workqueue_cancelled_total{name}           delayed adds cancelled (pending_after)
     controller_runtime_reconcile_total{controller,result}  success, error
                          (terminal errors included), requeue, requeue_after
     controller_runtime_reconcile_errors_total{controller}  every error
     controller_runtime_terminal_reconcile_errors_total{controller}
     controller_runtime_reconcile_time_seconds{controller}  controller-runtime's
                          40 buckets, 5 ms to 60 s, on the controller's clock
     controller_runtime_max_concurrent_reconciles{controller}  its workers
     controller_runtime_active_workers{controller}  reconciles running now
     kctl_controller_offline, _parked_keys, _hot_loops_total{controller}
                          offline mode and the hot-loop detector
     kctl_store_requests_total{verb,code}       every request to the store
     kctl_reflector_lists_total, _relists_total, _watch_restarts_total,
     _events_total{type}  per informer: {resource} ("group/resource/namespace"),
                          plus label_selector, field_selector when set
     leader_election_master_status{name}        with leader election
   TOO_LARGE when it does not fit; *len (may be NULL) gets the length
   either way. NOMEM. INVALID_ARG: NULL m, or NULL buf with cap > 0. [any thread] */
KCTL_API int kctl_manager_metrics(kctl_manager *m, char *buf, size_t cap, size_t *len);

/* ============================================== >>reported REPORTED STATE */
/* A device's reported state (the reported half of a device shadow or twin,
   written into an object's status): the application sets fields at any
   rate, from any thread; kctl coalesces them and writes them to the store.

       kctl_reported_desc rd = kctl_reported_desc_init();
       rd.transport = t; rd.resource = res; rd.name = "sensor-1";
       rd.writes = 2; rd.per_ns = KCTL_SEC(1);   // at most 2 writes a second
       kctl_reported_create(&rd, &rep);
       kctl_reported_set_double(rep, "temperature", 21.5);  // any rate
       kctl_reported_set_string(rep, "firmware", "1.4.2");
       for (;;) {                                 // your main loop
           uint64_t next;
           kctl_reported_step(rep, kctl_clock_now(&clock), &next);
           sleep_until(next);                     // or whatever else is due first
       }

   Each field set is a member of .status (the value is JSON: an object is
   merged into what is there, as a JSON merge patch merges it; null removes
   the member); kctl_reported_set_status replaces the whole status, and the
   fields set after it go on top. A field set again before it is written
   keeps only its last value. A write (at a step, when one is due):
     - reads the object (the first time, and after a conflict; otherwise it
       uses what its last write returned), applies the fields to its status
       and writes it with kctl_status_update: compare-before-write, so a
       write that would change nothing is not made (stats.unchanged), and
       the object's resourceVersion as the precondition;
     - is rate limited per object by a token bucket: at most `writes` per
       per_ns, with bursts of `burst`. Sets in between are coalesced, and
       the last value is always written in the end: a sensor that changes
       100 times a second makes at most the configured writes, the final
       value included;
     - on CONFLICT, re-reads, reapplies the fields and writes again, at
       most max_conflicts times in a row with backoff (conflict_backoff_ns
       doubling), then backs off as after an error;
     - on any other error (IO, TIMEOUT, AGAIN, NOT_FOUND...) keeps the
       fields and backs off (backoff_initial_ns doubling to backoff_max_ns);
       the next good write resets it.
   A status write changes no spec, so it does not change the generation:
   a controller that watches the object with a generation-changed predicate
   (KCTL_PRED_GENERATION_CHANGED) is not woken by it, and reported state
   cannot drive a status loop.

   Driving: kctl_reported_step from the caller's loop (the single-threaded
   step model: bounded work, then the next deadline). kctl starts no
   thread for it; with threads, call step from one thread of yours (sets
   may come from any). */
typedef struct kctl_reported kctl_reported;

/* Options; zero means the default (in brackets):
     transport, resource, name   the object (required; strings copied; for a
                         namespaced resource, resource.ns names its namespace)
     writes, per_ns      at most `writes` writes per per_ns [1 per second]
     burst               writes allowed back to back after a quiet spell [1]
     max_conflicts       conflicts retried in a row [5, client-go's DefaultRetry]
     conflict_backoff_ns first wait after a conflict, doubling [10 ms]
     backoff_initial_ns, backoff_max_ns  after an error [1 s, 60 s]
     allocator, logger */
typedef struct kctl_reported_desc {
    kctl_transport transport;
    kctl_resource resource;
    const char *name;
    uint32_t writes;
    uint64_t per_ns;
    uint32_t burst;
    uint32_t max_conflicts;
    uint64_t conflict_backoff_ns;
    uint64_t backoff_initial_ns, backoff_max_ns;
    kctl_allocator allocator;
    kctl_logger logger;
} kctl_reported_desc;

typedef struct kctl_reported_stats {
    uint64_t sets;       /* fields and documents set */
    uint64_t writes;     /* status writes the store took */
    uint64_t unchanged;  /* writes not made: the status already said it */
    uint64_t conflicts;  /* writes refused with CONFLICT (each retried) */
    uint64_t errors;     /* other failed reads and writes (each backed off) */
    int last_error;      /* the last failure's code; OK after a good write */
} kctl_reported_stats;

/* The defaults, filled. [any thread] */
KCTL_API kctl_reported_desc kctl_reported_desc_init(void);
/* Create it. INVALID_ARG: no transport, resource or name, a lone
   allocator function, writes or per_ns given without the other; NOMEM. [any thread] */
KCTL_API int kctl_reported_create(const kctl_reported_desc *desc, kctl_reported **out);
/* Free it; fields not yet written are dropped (step until
   kctl_reported_pending is false first to keep them). NULL is fine. [not thread-safe] */
KCTL_API void kctl_reported_destroy(kctl_reported *r);
/* Set status.<field> to the JSON value json[0..len) (KCTL_NTS: counted):
   copied. INVALID_ARG: NULL or empty field, invalid JSON; NOMEM. [any thread] */
KCTL_API int kctl_reported_set(kctl_reported *r, const char *field, const char *json, size_t len);
/* The same for a value of C type (a string is escaped). INVALID_ARG also
   for a double that is not finite. [any thread] */
KCTL_API int kctl_reported_set_int(kctl_reported *r, const char *field, int64_t v);
KCTL_API int kctl_reported_set_double(kctl_reported *r, const char *field, double v);
KCTL_API int kctl_reported_set_bool(kctl_reported *r, const char *field, bool v);
KCTL_API int kctl_reported_set_string(kctl_reported *r, const char *field, const char *v);
/* Replace the whole status with the JSON object json[0..len); fields set
   before are dropped, fields set after go on top. INVALID_ARG: not a JSON
   object; NOMEM. [any thread] */
KCTL_API int kctl_reported_set_status(kctl_reported *r, const char *json, size_t len);
/* Write if a write is due and allowed; *next_ns (may be NULL) gets the
   clock time (now's clock) to call again at the latest: UINT64_MAX when
   nothing is pending. now is the caller's clock, in ns. Returns OK, or
   the code of a write that failed (kept for later: it is retried after a
   backoff, nothing to do); INVALID_ARG for NULL r. [not thread-safe: one
   thread steps] */
KCTL_API int kctl_reported_step(kctl_reported *r, uint64_t now, uint64_t *next_ns);
/* Whether fields wait to be written. [any thread] */
KCTL_API bool kctl_reported_pending(kctl_reported *r);
/* Its counters. [any thread] */
KCTL_API void kctl_reported_read_stats(kctl_reported *r, kctl_reported_stats *out);

#ifdef __cplusplus
} /* extern "C" */
#endif
#endif /* KCTL_H_INCLUDED */

/* ========================================================================== */
/* ============================ IMPLEMENTATION ============================== */
/* ========================================================================== */
#if defined(KCTL_IMPLEMENTATION) && !defined(KCTL_IMPLEMENTATION_DONE)
#define KCTL_IMPLEMENTATION_DONE

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <errno.h>
#include <float.h>
#ifndef KCTL_NO_FILES
#include <fcntl.h>
#include <unistd.h>
#include <sys/stat.h>
#endif

#ifndef KCTL_MAX_KEY_LEN
#define KCTL_MAX_KEY_LEN 4096
#endif
#if defined(KCTL_NO_FLOAT) && !defined(KCTL_NO_JSON_DOUBLE)
#define KCTL_NO_JSON_DOUBLE /* no floating point anywhere */
#endif
#if defined(KCTL_NO_MERGE_PATCH) && !defined(KCTL_NO_LEADER)
#define KCTL_NO_LEADER /* the elector writes its Lease by merge patch */
#endif
#if defined(KCTL_NO_DURATIONS) && !defined(KCTL_NO_METRICS)
#define KCTL_NO_METRICS /* the metrics would have no durations */
#endif
#ifndef KCTL_MALLOC
#define KCTL_MALLOC(sz, ud) ((void)(ud), malloc(sz))
#endif
#ifndef KCTL_FREE
#define KCTL_FREE(p, ud) ((void)(ud), free(p))
#endif
#ifndef KCTL_QUEUE_SPIN
#define KCTL_QUEUE_SPIN 5000
#endif
#ifndef KCTL_QUEUE_LINGER
#define KCTL_QUEUE_LINGER 300
#endif
#ifndef KCTL_LOCK_SPIN
#define KCTL_LOCK_SPIN 5000
#endif
#ifndef KCTL_SMALL /* smaller code, the same behaviour: 1 under -Os */
#ifdef __OPTIMIZE_SIZE__
#define KCTL_SMALL 1
#else
#define KCTL_SMALL 0
#endif
#endif
#if KCTL_MAX_KEY_LEN < 1
#error "KCTL_MAX_KEY_LEN must be at least 1"
#endif

#if defined(__GNUC__) || defined(__clang__)
#define KCTL__ATOMICS 1
#define KCTL__PREFETCH(p) __builtin_prefetch(p)
#define KCTL__UNUSED __attribute__((unused))
#define KCTL__LIKELY(x) __builtin_expect(!!(x), 1)
#define KCTL__UNLIKELY(x) __builtin_expect(!!(x), 0)
#else
#define KCTL__PREFETCH(p) ((void)0)
#define KCTL__UNUSED
#define KCTL__LIKELY(x) (x)
#define KCTL__UNLIKELY(x) (x)
#endif

/* ---------------------------------------------------- >>platform PLATFORM */
/* The only place that knows the system. First the port: the KCTL_PORT_*
   macros of PORTING in the manual (clock, wall time, sleep, mutex,
   condition variable, threads, atomics), POSIX unless KCTL_PORT_CUSTOM.
   Then kctl's locks on top of it; KCTL_NO_THREADS turns them into no-ops
   and leaves out threads, so that build needs only KCTL_PORT_NOW_NS.

   On the POSIX port with compiler atomics (gcc, clang) the mutex is a
   test-and-test-and-set lock that spins on a read before it parks: the
   queue's lock is held for tens of nanoseconds at a time, and waiters
   that keep writing the lock word (as trylock loops do) slow its holder
   down. Between tries a waiter backs off (1, 2, 4 ... 16 pauses): a
   producer and a worker that both want the lock take it in short runs
   instead of trading it key by key, which nearly doubles the queue's
   throughput. The port's mutex and condition variable only park and
   wake: the lock word says 2 while a thread may be parked, and an unlock
   that finds 2 wakes one. The condition variable counts signals, so a
   waiter that releases the lock first and parks afterwards cannot miss
   one. A custom port's mutex and condition variable are used as they
   are: on an RTOS a task spinning for a lock only keeps its holder (on
   the one core) from running, and the RTOS mutex has priority
   inheritance. */

#ifndef KCTL_THREAD_STACK_SIZE
#define KCTL_THREAD_STACK_SIZE 0 /* bytes; 0: the port's default */
#endif

#ifndef KCTL_PORT_CUSTOM
/* ---- the POSIX port (the default) */
#if !defined(CLOCK_MONOTONIC)
#error "kctl.h: the implementation needs POSIX (CLOCK_MONOTONIC, pthreads): include kctl.h before any system header in the file that defines KCTL_IMPLEMENTATION, or compile with -D_POSIX_C_SOURCE=200809L (or bring a port of your own: KCTL_PORT_CUSTOM)"
#endif
static uint64_t kctl__posix_ns(clockid_t id) {
    struct timespec ts;
    clock_gettime(id, &ts);
    return (uint64_t)ts.tv_sec * UINT64_C(1000000000) + (uint64_t)ts.tv_nsec;
}
static KCTL__UNUSED void kctl__posix_sleep_ns(uint64_t ns) {
    struct timespec ts;
    ts.tv_sec = (time_t)(ns / UINT64_C(1000000000));
    ts.tv_nsec = (long)(ns % UINT64_C(1000000000));
    while (nanosleep(&ts, &ts) != 0 && errno == EINTR) { }
}
#define KCTL_PORT_NOW_NS() kctl__posix_ns(CLOCK_MONOTONIC)
#define KCTL_PORT_WALL_NS() kctl__posix_ns(CLOCK_REALTIME)
#define KCTL_PORT_SLEEP_NS(ns) kctl__posix_sleep_ns(ns)

#ifndef KCTL_NO_THREADS
#include <pthread.h>
#include <sched.h>
#include <limits.h>
#ifndef PTHREAD_STACK_MIN
#define PTHREAD_STACK_MIN 16384
#endif
/* Condition variables on CLOCK_MONOTONIC, so deadlines are the clock's. */
static int kctl__posix_cond_init(pthread_cond_t *c) {
    pthread_condattr_t a;
    int rc;
    if (pthread_condattr_init(&a) != 0) return -1;
    pthread_condattr_setclock(&a, CLOCK_MONOTONIC);
    rc = pthread_cond_init(c, &a);
    pthread_condattr_destroy(&a);
    return rc;
}
static int kctl__posix_cond_wait_until(pthread_cond_t *c, pthread_mutex_t *m, uint64_t at) {
    struct timespec ts;
    if (at / UINT64_C(1000000000) > (uint64_t)INT32_MAX) at = (uint64_t)INT32_MAX * UINT64_C(1000000000);
    ts.tv_sec = (time_t)(at / UINT64_C(1000000000));
    ts.tv_nsec = (long)(at % UINT64_C(1000000000));
    return pthread_cond_timedwait(c, m, &ts);
}
/* A stack below PTHREAD_STACK_MIN is raised to it; a size is rounded up
   to whole 4 KiB pages (some systems refuse others). */
static int kctl__posix_thread_start(pthread_t *t, void *(*fn)(void *), void *arg, size_t stack) {
    pthread_attr_t a;
    int rc;
    if (pthread_attr_init(&a) != 0) return -1;
    if (stack) {
        if (stack < (size_t)PTHREAD_STACK_MIN) stack = (size_t)PTHREAD_STACK_MIN;
        stack = (stack + 4095u) & ~(size_t)4095u;
    }
    rc = stack ? pthread_attr_setstacksize(&a, stack) : 0;
    if (rc == 0) rc = pthread_create(t, &a, fn, arg);
    pthread_attr_destroy(&a);
    return rc;
}
#define KCTL_PORT_MUTEX pthread_mutex_t
#define KCTL_PORT_MUTEX_INIT(m) pthread_mutex_init((m), NULL)
#define KCTL_PORT_MUTEX_DEINIT(m) pthread_mutex_destroy(m)
#define KCTL_PORT_MUTEX_LOCK(m) pthread_mutex_lock(m)
#define KCTL_PORT_MUTEX_UNLOCK(m) pthread_mutex_unlock(m)
#define KCTL_PORT_COND pthread_cond_t
#define KCTL_PORT_COND_INIT(c) kctl__posix_cond_init(c)
#define KCTL_PORT_COND_DEINIT(c) pthread_cond_destroy(c)
#define KCTL_PORT_COND_WAIT(c, m) pthread_cond_wait((c), (m))
#define KCTL_PORT_COND_WAIT_UNTIL(c, m, at_ns) kctl__posix_cond_wait_until((c), (m), (at_ns))
#define KCTL_PORT_COND_SIGNAL(c) pthread_cond_signal(c)
#define KCTL_PORT_COND_BROADCAST(c) pthread_cond_broadcast(c)
#define KCTL_PORT_THREAD pthread_t
#define KCTL_PORT_THREAD_START(t, fn, arg, stack_bytes) kctl__posix_thread_start((t), (fn), (arg), (stack_bytes))
#define KCTL_PORT_THREAD_JOIN(t) pthread_join(*(t), NULL)
#define KCTL_PORT_YIELD() sched_yield()
#if defined(KCTL__ATOMICS)
#define KCTL__FASTLOCK 1 /* the spinning mutex and readers-writer lock below */
#endif
#endif /* !KCTL_NO_THREADS */

#else
/* ---- a port of your own: what it must define (PORTING in the manual) */
#ifndef KCTL_PORT_NOW_NS
#error "kctl.h: KCTL_PORT_CUSTOM needs KCTL_PORT_NOW_NS(): a monotonic clock in nanoseconds, e.g. from a tick counter (see PORTING)"
#endif
#ifndef KCTL_PORT_WALL_NS
#define KCTL_PORT_WALL_NS() KCTL_PORT_NOW_NS() /* no real-time clock: objects are stamped from 1970 plus uptime */
#endif
#ifndef KCTL_PORT_YIELD
#define KCTL_PORT_YIELD() ((void)0)
#endif
#ifndef KCTL_PORT_SLEEP_NS
/* no sleep: wait on the clock (only the retry helper and the memstore's
   latency fault sleep, and only with threads) */
static KCTL__UNUSED void kctl__port_spin_sleep_ns(uint64_t ns) {
    uint64_t t0 = KCTL_PORT_NOW_NS();
    while (KCTL_PORT_NOW_NS() - t0 < ns) KCTL_PORT_YIELD();
}
#define KCTL_PORT_SLEEP_NS(ns) kctl__port_spin_sleep_ns(ns)
#endif
#ifndef KCTL_NO_THREADS
#if !defined(KCTL_PORT_MUTEX) || !defined(KCTL_PORT_MUTEX_INIT) || !defined(KCTL_PORT_MUTEX_DEINIT) || \
    !defined(KCTL_PORT_MUTEX_LOCK) || !defined(KCTL_PORT_MUTEX_UNLOCK)
#error "kctl.h: KCTL_PORT_CUSTOM with threads needs the mutex: KCTL_PORT_MUTEX, _INIT, _DEINIT, _LOCK, _UNLOCK (see PORTING), or define KCTL_NO_THREADS"
#endif
#if !defined(KCTL_PORT_COND) || !defined(KCTL_PORT_COND_INIT) || !defined(KCTL_PORT_COND_DEINIT) || \
    !defined(KCTL_PORT_COND_WAIT) || !defined(KCTL_PORT_COND_WAIT_UNTIL) || !defined(KCTL_PORT_COND_SIGNAL) || \
    !defined(KCTL_PORT_COND_BROADCAST)
#error "kctl.h: KCTL_PORT_CUSTOM with threads needs the condition variable: KCTL_PORT_COND, _INIT, _DEINIT, _WAIT, _WAIT_UNTIL, _SIGNAL, _BROADCAST (see PORTING), or define KCTL_NO_THREADS"
#endif
#if !defined(KCTL_PORT_THREAD) || !defined(KCTL_PORT_THREAD_START) || !defined(KCTL_PORT_THREAD_JOIN)
#error "kctl.h: KCTL_PORT_CUSTOM with threads needs threads: KCTL_PORT_THREAD, _START, _JOIN (see PORTING), or define KCTL_NO_THREADS"
#endif
#endif /* !KCTL_NO_THREADS */
#endif /* KCTL_PORT_CUSTOM */

/* ---- atomics: the reference counts of shared objects (and, with
   compiler atomics, the hints below). gcc and clang: their __atomic
   builtins (on a core without atomic instructions, Cortex-M0, they call
   __atomic_* functions the port links in). A port for another compiler
   defines the four. Without threads: plain arithmetic. */
#ifdef KCTL_NO_THREADS
#define KCTL__ATOMIC_INC(p) (++*(p))
#define KCTL__ATOMIC_DEC(p) (--*(p))
#else
#if !defined(KCTL_PORT_ATOMIC_INC) && defined(KCTL__ATOMICS)
#define KCTL_PORT_ATOMIC_INC(p) __atomic_add_fetch((p), 1u, __ATOMIC_RELAXED)  /* ++*p; the new value */
#define KCTL_PORT_ATOMIC_DEC(p) __atomic_sub_fetch((p), 1u, __ATOMIC_ACQ_REL)  /* --*p; the new value */
#define KCTL_PORT_ATOMIC_LOAD(p) __atomic_load_n((p), __ATOMIC_RELAXED)
#define KCTL_PORT_ATOMIC_STORE(p, v) __atomic_store_n((p), (v), __ATOMIC_RELAXED)
#endif
#if !defined(KCTL_PORT_ATOMIC_INC) || !defined(KCTL_PORT_ATOMIC_DEC)
#error "kctl.h: threads need atomics for reference counts: build with gcc or clang, define KCTL_PORT_ATOMIC_INC and _DEC (see PORTING), or define KCTL_NO_THREADS"
#endif
#define KCTL__ATOMIC_INC(p) KCTL_PORT_ATOMIC_INC(p)
#define KCTL__ATOMIC_DEC(p) KCTL_PORT_ATOMIC_DEC(p)
#endif

/* Hints: fields written under a lock with relaxed atomic stores and read
   without it (to prefetch, or to spin until work arrives). Without
   atomic loads and stores, or without threads, there are no hints: no
   prefetch before locking, and idle workers park at once. */
#if defined(KCTL_PORT_ATOMIC_LOAD) && defined(KCTL_PORT_ATOMIC_STORE) && !defined(KCTL_NO_THREADS)
#define KCTL__HINTS 1
#define KCTL__LOAD(p) KCTL_PORT_ATOMIC_LOAD(p)
#define KCTL__STORE(p, v) KCTL_PORT_ATOMIC_STORE((p), (v))
#endif

/* ---- sleeping and wall time, for every section */
static KCTL__UNUSED void kctl__port_sleep_ns(uint64_t ns) { KCTL_PORT_SLEEP_NS(ns); }

/* Wall time: nanoseconds since the Unix epoch, for the times objects
   carry (creationTimestamp, a Lease's renewTime), never for waiting. */
static uint64_t kctl__port_wall_ns(void) { return (uint64_t)(KCTL_PORT_WALL_NS()); }

#ifndef KCTL_NO_THREADS
static inline void kctl__cpu_relax(void) {
#if defined(__GNUC__) && (defined(__x86_64__) || defined(__i386__))
    __asm__ __volatile__("pause");
#elif defined(__GNUC__) && defined(__aarch64__)
    __asm__ __volatile__("yield");
#endif
}
static inline void kctl__yield(void) { KCTL_PORT_YIELD(); }

/* An absolute time on the port's clock rel_ns from now, for timed waits. */
static uint64_t kctl__deadline(uint64_t rel_ns) {
    uint64_t at = KCTL_PORT_NOW_NS();
    return (rel_ns > UINT64_MAX - at) ? UINT64_MAX : at + rel_ns;
}

/* How many CPUs this process may run on: the affinity mask where the
   system headers declare it (Linux with _GNU_SOURCE), else the CPUs online.
   Asked when a lock or a queue is made, never on a hot path. */
static int kctl__cpus_usable(void) {
#if defined(KCTL_PORT_CUSTOM)
#ifdef KCTL_PORT_CPUS
    return KCTL_PORT_CPUS(); /* a port's count of the CPUs kctl's threads may run on */
#else
    return 1; /* not known: no spinning */
#endif
#else
#if defined(__linux__) && defined(CPU_COUNT)
    cpu_set_t set;
    if (sched_getaffinity(0, sizeof set, &set) == 0) return CPU_COUNT(&set);
#endif
#ifdef _SC_NPROCESSORS_ONLN
    {
        long n = sysconf(_SC_NPROCESSORS_ONLN);
        if (n > 0) return n > 64 ? 64 : (int)n;
    }
#endif
    return 1;
#endif
}

/* The CPUs the calling thread may run on, bit i for CPU i (the first 64),
   or 0 when not known (no affinity call, or a custom port). A system call:
   asked when a worker parks, never on a hot path. */
static KCTL__UNUSED uint64_t kctl__cpu_mask(void) {
#if !defined(KCTL_PORT_CUSTOM) && defined(__linux__) && defined(CPU_COUNT)
    cpu_set_t set;
    uint64_t m = 0;
    int i;
    if (sched_getaffinity(0, sizeof set, &set) != 0) return 0;
    for (i = 0; i < 64; i++)
        if (CPU_ISSET(i, &set)) m |= (uint64_t)1 << i;
    return m;
#else
    return 0;
#endif
}

#ifdef KCTL__HINTS
/* Spinning. A waiter that expects what it waits for within microseconds (a
   lock's holder to leave, a producer's next key) may spin instead of
   parking, saving a futex round trip and a wake-up. A spin must never take
   the time slice of the thread it waits for: with no idle CPU, a spinner
   holds the CPU the thread it waits for needs, and the scheduler lets it
   (the woken thread waits for the spinner's slice, about a millisecond).
   So a spin is
   - off when the process may run on one CPU (budget 0, set at create; a
     queue made by a thread pinned to one CPU turns it on once a thread
     that may run elsewhere waits on it: kctl__spin_widen),
   - bounded by time, not by pauses (a pause costs 10 to 150 cycles,
     depending on the CPU),
   - adaptive: a score rises when a spin found what it waited for and falls
     by KCTL__SPIN_MISS when it did not; below KCTL__SPIN_ON only one wait
     in KCTL__SPIN_PROBE spins (to notice that spinning pays again). A spin
     that pays off in fewer than 4 of 5 waits soon stops.
   The fields are read and written with relaxed atomics: a lock's waiters
   read them without the lock; a lost update only skews a heuristic. */
#define KCTL__SPIN_ON 4     /* score from which every wait spins */
#define KCTL__SPIN_MAX 16   /* the score's ceiling: 3 misses in a row stop spinning */
#define KCTL__SPIN_MISS 4   /* a spin that did not pay off costs this much score */
#define KCTL__SPIN_PROBE 32 /* with a low score, one wait in this many spins */
typedef struct kctl__spin {
    uint32_t budget_ns; /* how long one spin may last; 0: never spin */
    uint32_t score;     /* recent success */
    uint32_t skips;     /* waits that did not spin since the last probe */
} kctl__spin;

static void kctl__spin_init(kctl__spin *s, uint32_t budget_ns, int cpus) {
    s->budget_ns = cpus > 1 ? budget_ns : 0;
    s->score = KCTL__SPIN_ON; /* spin until it proves useless */
    s->skips = 0;
}

/* Whether this wait should spin. */
static bool kctl__spin_begin(kctl__spin *s) {
    uint32_t skips;
    if (!KCTL__LOAD(&s->budget_ns)) return false; /* a lock's waiters read it unlocked (kctl__mutex_spin_widen) */
    if (KCTL__LOAD(&s->score) >= KCTL__SPIN_ON) return true;
    skips = KCTL__LOAD(&s->skips) + 1;
    KCTL__STORE(&s->skips, skips >= KCTL__SPIN_PROBE ? 0u : skips);
    return skips >= KCTL__SPIN_PROBE;
}

/* A waiter on CPUs mask (0: not known) joins the threads seen in *seen.
   Spinning that was off (budget 0) turns on, with budget_ns, once the
   threads seen may run on two CPUs or more: then a spinner need not hold
   the CPU of the thread it waits for. Never turns spinning off. */
static void kctl__spin_widen(kctl__spin *s, uint64_t *seen, uint64_t mask, uint32_t budget_ns) {
    if (!mask || !*seen) return;
    *seen |= mask;
    if (!s->budget_ns && budget_ns && (*seen & (*seen - 1)) != 0) KCTL__STORE(&s->budget_ns, budget_ns);
}

/* A spin begun ended: paid says whether it found what it waited for. */
static void kctl__spin_end(kctl__spin *s, bool paid) {
    uint32_t score = KCTL__LOAD(&s->score);
    if (paid) score = score < KCTL__SPIN_ON ? KCTL__SPIN_ON : score < KCTL__SPIN_MAX ? score + 1 : KCTL__SPIN_MAX;
    else score = score > KCTL__SPIN_MISS ? score - KCTL__SPIN_MISS : 0;
    KCTL__STORE(&s->score, score);
}

/* Real time for spins, whatever clock the object runs on (a virtual one
   would never end a spin). */
static uint64_t kctl__spin_clock(void *unused) {
    (void)unused;
    return KCTL_PORT_NOW_NS();
}

/* Spin until *word is no longer seen or budget_ns have passed on now_fn's
   clock: true if it changed. The clock is read every 8 pauses. */
static bool kctl__spin_until(const unsigned *word, unsigned seen, uint64_t budget_ns, uint64_t (*now_fn)(void *),
                             void *ud) {
    uint64_t end = now_fn(ud) + budget_ns;
    int i;
    for (;;) {
        for (i = 0; i < 8; i++) {
            if (KCTL__LOAD(word) != seen) return true;
            kctl__cpu_relax();
        }
        if (now_fn(ud) >= end) return KCTL__LOAD(word) != seen;
    }
}

#ifdef KCTL__SPIN_TEST
/* kctl's tests only: the spin policy on a scripted run. For each byte of
   paid ('1' a spin would pay off, '0' it would not), decided gets 'S' if
   that wait spins (and its outcome is fed back) or '-' if it parks at once.
   decided holds strlen(paid) + 1 bytes. */
KCTL_API void kctl__spin_script(int cpus, const char *paid, char *decided) {
    kctl__spin s;
    size_t i;
    kctl__spin_init(&s, 1000, cpus);
    for (i = 0; paid[i]; i++) {
        bool spin = kctl__spin_begin(&s);
        decided[i] = spin ? 'S' : '-';
        if (spin) kctl__spin_end(&s, paid[i] == '1');
    }
    decided[i] = 0;
}
/* kctl's tests only: kctl__spin_widen on a script. A spin made on a thread
   allowed CPUs masks[0] (budget 0 if that is one CPU), then waiters with
   masks[1..n-1] join in turn; on[i] gets 'S' if spinning is on after
   waiter i, else '-'. on holds n + 1 bytes. */
KCTL_API void kctl__spin_widen_script(const uint64_t *masks, size_t n, char *on) {
    kctl__spin s;
    uint64_t seen = masks[0];
    size_t i;
    int cpus = 0;
    for (i = 0; i < 64; i++) cpus += (int)((masks[0] >> i) & 1u);
    kctl__spin_init(&s, 1000, cpus);
    on[0] = s.budget_ns ? 'S' : '-';
    for (i = 1; i < n; i++) {
        kctl__spin_widen(&s, &seen, masks[i], 1000);
        on[i] = s.budget_ns ? 'S' : '-';
    }
    on[n] = 0;
}
/* kctl's tests only: kctl__spin_until on the caller's clock. */
KCTL_API bool kctl__spin_until_test(const unsigned *word, unsigned seen, uint64_t budget_ns, uint64_t (*now_fn)(void *),
                                    void *ud) {
    return kctl__spin_until(word, seen, budget_ns, now_fn, ud);
}
#endif
#endif /* KCTL__HINTS */

/* A readers-writer lock for read-mostly state (the cache). With compiler
   atomics, readers count themselves in one of 16 slots, each on a cache
   line of its own, chosen by where the thread's stack is: readers on
   different cores write different lines, and taking the lock is one
   atomic add on a line the core already owns, plus a read of the writer
   flag. A writer takes a mutex, raises the flag and waits for every slot
   to drain; a reader that finds the flag raised steps back and waits on
   the mutex. Writers go first (readers cannot starve them). rd returns
   the slot that rd_unlock takes. On a custom port: one mutex. */
#ifdef KCTL__FASTLOCK
#define KCTL__RW_SLOTS 16 /* the top 4 bits of a hash pick one */
typedef char kctl__rw_slots_fit[KCTL__RW_SLOTS == 16 ? 1 : -1];
typedef struct kctl__rwlock {
    struct {
        unsigned n;
        char pad[64 - sizeof(unsigned)];
    } rd[KCTL__RW_SLOTS];
    unsigned writer;
    kctl__spin spin; /* readers that meet a writer: wait for its flag to drop, or park on wmu */
    KCTL_PORT_MUTEX wmu;
} kctl__rwlock;
static int kctl__rwlock_init(kctl__rwlock *l) {
    memset(l->rd, 0, sizeof l->rd);
    l->writer = 0;
    kctl__spin_init(&l->spin, KCTL_LOCK_SPIN, kctl__cpus_usable());
    return KCTL_PORT_MUTEX_INIT(&l->wmu) == 0 ? KCTL_OK : KCTL_ERR_NOMEM;
}
static void kctl__rwlock_deinit(kctl__rwlock *l) { KCTL_PORT_MUTEX_DEINIT(&l->wmu); }
static unsigned kctl__rwlock_rd(kctl__rwlock *l) {
    unsigned char here;
    unsigned s = (unsigned)((((uint64_t)(uintptr_t)&here >> 12) * UINT64_C(0x9e3779b97f4a7c15)) >> 60); /* top 4 bits: 16 slots */
    for (;;) {
        __atomic_fetch_add(&l->rd[s].n, 1u, __ATOMIC_SEQ_CST);
        if (!__atomic_load_n(&l->writer, __ATOMIC_SEQ_CST)) return s;
        __atomic_fetch_sub(&l->rd[s].n, 1u, __ATOMIC_RELEASE); /* a writer: let it go first */
        if (kctl__spin_begin(&l->spin)) { /* a write is short: its end, without a futex round trip */
            bool gone = kctl__spin_until(&l->writer, 1u, KCTL__LOAD(&l->spin.budget_ns), kctl__spin_clock, NULL);
            kctl__spin_end(&l->spin, gone);
            if (gone) continue;
        }
        KCTL_PORT_MUTEX_LOCK(&l->wmu);
        KCTL_PORT_MUTEX_UNLOCK(&l->wmu);
    }
}
static void kctl__rwlock_rd_unlock(kctl__rwlock *l, unsigned slot) { __atomic_fetch_sub(&l->rd[slot].n, 1u, __ATOMIC_RELEASE); }
static void kctl__rwlock_wr(kctl__rwlock *l) {
    unsigned i, spins = 0;
    KCTL_PORT_MUTEX_LOCK(&l->wmu);
    __atomic_store_n(&l->writer, 1u, __ATOMIC_SEQ_CST);
    for (i = 0; i < KCTL__RW_SLOTS; i++)
        while (__atomic_load_n(&l->rd[i].n, __ATOMIC_SEQ_CST)) { /* readers hold it for little, but replace reads long */
            if (++spins < 64) kctl__cpu_relax();
            else if (spins < 256) kctl__yield();
            else kctl__port_sleep_ns(50000);
        }
}
static void kctl__rwlock_wr_unlock(kctl__rwlock *l) {
    __atomic_store_n(&l->writer, 0u, __ATOMIC_RELEASE);
    KCTL_PORT_MUTEX_UNLOCK(&l->wmu);
}
#else
typedef KCTL_PORT_MUTEX kctl__rwlock;
static int kctl__rwlock_init(kctl__rwlock *l) { return KCTL_PORT_MUTEX_INIT(l) == 0 ? KCTL_OK : KCTL_ERR_NOMEM; }
static void kctl__rwlock_deinit(kctl__rwlock *l) { KCTL_PORT_MUTEX_DEINIT(l); }
static unsigned kctl__rwlock_rd(kctl__rwlock *l) { KCTL_PORT_MUTEX_LOCK(l); return 0; }
static void kctl__rwlock_rd_unlock(kctl__rwlock *l, unsigned slot) { (void)slot; KCTL_PORT_MUTEX_UNLOCK(l); }
static void kctl__rwlock_wr(kctl__rwlock *l) { KCTL_PORT_MUTEX_LOCK(l); }
static void kctl__rwlock_wr_unlock(kctl__rwlock *l) { KCTL_PORT_MUTEX_UNLOCK(l); }
#endif

/* Threads, for the parts of kctl that run their own (informers, workers),
   each with a stack of KCTL_THREAD_STACK_SIZE bytes (0: the port's default). */
typedef KCTL_PORT_THREAD kctl__thread;
KCTL__UNUSED static inline int kctl__thread_start(kctl__thread *t, void *(*fn)(void *), void *arg) {
    return KCTL_PORT_THREAD_START(t, fn, arg, (size_t)(KCTL_THREAD_STACK_SIZE)) == 0 ? KCTL_OK : KCTL_ERR_NOMEM;
}
KCTL__UNUSED static inline void kctl__thread_join(kctl__thread t) { KCTL_PORT_THREAD_JOIN(&t); }

#ifdef KCTL__FASTLOCK
typedef struct kctl__mutex {
    unsigned state; /* 0 free, 1 held, 2 held and a thread may be parked */
    kctl__spin spin;
    KCTL_PORT_MUTEX park_mu;
    KCTL_PORT_COND park_cv;
} kctl__mutex;

typedef struct kctl__cond {
    unsigned gen;     /* bumped by every signal and broadcast */
    unsigned waiters; /* threads in a wait: a signal with none makes no call */
    KCTL_PORT_MUTEX park_mu;
    KCTL_PORT_COND park_cv;
} kctl__cond;

static int kctl__mutex_init(kctl__mutex *m) {
    m->state = 0;
    kctl__spin_init(&m->spin, KCTL_LOCK_SPIN, kctl__cpus_usable());
    if (KCTL_PORT_MUTEX_INIT(&m->park_mu) != 0) return KCTL_ERR_NOMEM;
    if (KCTL_PORT_COND_INIT(&m->park_cv) != 0) {
        KCTL_PORT_MUTEX_DEINIT(&m->park_mu);
        return KCTL_ERR_NOMEM;
    }
    return KCTL_OK;
}
static void kctl__mutex_deinit(kctl__mutex *m) {
    KCTL_PORT_COND_DEINIT(&m->park_cv);
    KCTL_PORT_MUTEX_DEINIT(&m->park_mu);
}
static bool kctl__mutex_trylock(kctl__mutex *m) {
    unsigned free_ = 0;
    return KCTL__LOAD(&m->state) == 0 &&
           __atomic_compare_exchange_n(&m->state, &free_, 1u, false, __ATOMIC_ACQUIRE, __ATOMIC_RELAXED);
}
static void kctl__mutex_lock(kctl__mutex *m) {
    bool spun;
    if (kctl__mutex_trylock(m)) return;
    spun = kctl__spin_begin(&m->spin);
    if (spun) { /* back off 1, 2 ... 16 pauses between tries, for at most budget_ns */
        uint64_t end = kctl__spin_clock(NULL) + KCTL__LOAD(&m->spin.budget_ns);
        int k, backoff = 1;
        for (;;) {
            for (k = 0; k < backoff; k++) kctl__cpu_relax();
            if (kctl__mutex_trylock(m)) {
                kctl__spin_end(&m->spin, true);
                return;
            }
            if (backoff < 16) backoff *= 2;
            else if (kctl__spin_clock(NULL) >= end) break;
        }
    }
    KCTL_PORT_MUTEX_LOCK(&m->park_mu);
    while (__atomic_exchange_n(&m->state, 2u, __ATOMIC_ACQUIRE) != 0) KCTL_PORT_COND_WAIT(&m->park_cv, &m->park_mu);
    KCTL_PORT_MUTEX_UNLOCK(&m->park_mu);
    if (spun) kctl__spin_end(&m->spin, false); /* held now: the score is ours to write */
}
/* A lock made on a thread pinned to one CPU does not spin (kctl__spin_init):
   its owner turns spinning on once it knows its users run on two CPUs or
   more (the queue, when its workers park: kctl__spin_widen). */
static void kctl__mutex_spin_widen(kctl__mutex *m) {
    if (!KCTL__LOAD(&m->spin.budget_ns)) KCTL__STORE(&m->spin.budget_ns, (uint32_t)KCTL_LOCK_SPIN); /* KCTL_LOCK_SPIN 0: stays off */
}
/* A parked waiter is signalled after park_mu is let go: woken, it takes
   park_mu at once, without a second futex round trip for it. Taking
   park_mu first is what makes that safe: the waiter is then either before
   its exchange (it finds the lock free) or inside its wait (signalled). */
static void kctl__mutex_unlock(kctl__mutex *m) {
    if (__atomic_exchange_n(&m->state, 0u, __ATOMIC_RELEASE) == 2) {
        KCTL_PORT_MUTEX_LOCK(&m->park_mu);
        KCTL_PORT_MUTEX_UNLOCK(&m->park_mu);
        KCTL_PORT_COND_SIGNAL(&m->park_cv);
    }
}

static int kctl__cond_init(kctl__cond *c) {
    c->gen = 0;
    c->waiters = 0;
    if (KCTL_PORT_MUTEX_INIT(&c->park_mu) != 0) return KCTL_ERR_NOMEM;
    if (KCTL_PORT_COND_INIT(&c->park_cv) != 0) {
        KCTL_PORT_MUTEX_DEINIT(&c->park_mu);
        return KCTL_ERR_NOMEM;
    }
    return KCTL_OK;
}
static void kctl__cond_deinit(kctl__cond *c) {
    KCTL_PORT_COND_DEINIT(&c->park_cv);
    KCTL_PORT_MUTEX_DEINIT(&c->park_mu);
}
/* Wait for a signal (or, with a deadline, until the port's clock reads
   *until), m held. */
static void kctl__cond_wait_impl(kctl__cond *c, kctl__mutex *m, const uint64_t *until) {
    unsigned seen = __atomic_load_n(&c->gen, __ATOMIC_ACQUIRE);
    kctl__mutex_unlock(m);
    KCTL_PORT_MUTEX_LOCK(&c->park_mu);
    __atomic_add_fetch(&c->waiters, 1u, __ATOMIC_SEQ_CST); /* before gen is read: see kctl__cond_wake */
    while (__atomic_load_n(&c->gen, __ATOMIC_SEQ_CST) == seen) {
        if (!until) KCTL_PORT_COND_WAIT(&c->park_cv, &c->park_mu);
        else if (KCTL_PORT_COND_WAIT_UNTIL(&c->park_cv, &c->park_mu, *until) != 0) break;
    }
    __atomic_sub_fetch(&c->waiters, 1u, __ATOMIC_RELAXED);
    KCTL_PORT_MUTEX_UNLOCK(&c->park_mu);
    kctl__mutex_lock(m);
}
static void kctl__cond_wait(kctl__cond *c, kctl__mutex *m) { kctl__cond_wait_impl(c, m, NULL); }
static void kctl__cond_wait_for(kctl__cond *c, kctl__mutex *m, uint64_t rel_ns) {
    uint64_t until = kctl__deadline(rel_ns);
    kctl__cond_wait_impl(c, m, &until);
}
/* Bump gen, then wake one waiter or all. The waiter counts itself before
   it reads gen and the waker bumps gen before it reads the count (both
   sequentially consistent): one of them sees the other, so a waker that
   finds no waiter may skip the call. The call comes after park_mu is let
   go (taken first, so a waiter between its read of gen and its wait is
   inside the wait): woken, the waiter does not block on park_mu again. */
static void kctl__cond_wake(kctl__cond *c, bool all) {
    __atomic_add_fetch(&c->gen, 1u, __ATOMIC_SEQ_CST);
    if (!__atomic_load_n(&c->waiters, __ATOMIC_SEQ_CST)) return;
    KCTL_PORT_MUTEX_LOCK(&c->park_mu);
    KCTL_PORT_MUTEX_UNLOCK(&c->park_mu);
    if (all) KCTL_PORT_COND_BROADCAST(&c->park_cv);
    else KCTL_PORT_COND_SIGNAL(&c->park_cv);
}
static void kctl__cond_signal(kctl__cond *c) { kctl__cond_wake(c, false); }
static void kctl__cond_broadcast(kctl__cond *c) { kctl__cond_wake(c, true); }
#else /* the port's own mutex and condition variable */
typedef KCTL_PORT_MUTEX kctl__mutex;
typedef KCTL_PORT_COND kctl__cond;
static int kctl__mutex_init(kctl__mutex *m) { return KCTL_PORT_MUTEX_INIT(m) == 0 ? KCTL_OK : KCTL_ERR_NOMEM; }
static void kctl__mutex_deinit(kctl__mutex *m) { KCTL_PORT_MUTEX_DEINIT(m); }
static void kctl__mutex_lock(kctl__mutex *m) { KCTL_PORT_MUTEX_LOCK(m); }
static void kctl__mutex_unlock(kctl__mutex *m) { KCTL_PORT_MUTEX_UNLOCK(m); }
static KCTL__UNUSED void kctl__mutex_spin_widen(kctl__mutex *m) { (void)m; } /* the port's lock does not spin */
static int kctl__cond_init(kctl__cond *c) { return KCTL_PORT_COND_INIT(c) == 0 ? KCTL_OK : KCTL_ERR_NOMEM; }
static void kctl__cond_deinit(kctl__cond *c) { KCTL_PORT_COND_DEINIT(c); }
static void kctl__cond_wait(kctl__cond *c, kctl__mutex *m) { KCTL_PORT_COND_WAIT(c, m); }
static void kctl__cond_wait_for(kctl__cond *c, kctl__mutex *m, uint64_t rel_ns) {
    (void)KCTL_PORT_COND_WAIT_UNTIL(c, m, kctl__deadline(rel_ns));
}
static void kctl__cond_signal(kctl__cond *c) { KCTL_PORT_COND_SIGNAL(c); }
static void kctl__cond_broadcast(kctl__cond *c) { KCTL_PORT_COND_BROADCAST(c); }
#endif
#else /* KCTL_NO_THREADS */
typedef struct kctl__rwlock { int unused; } kctl__rwlock;
static int kctl__rwlock_init(kctl__rwlock *l) { (void)l; return KCTL_OK; }
static void kctl__rwlock_deinit(kctl__rwlock *l) { (void)l; }
static unsigned kctl__rwlock_rd(kctl__rwlock *l) { (void)l; return 0; }
static void kctl__rwlock_rd_unlock(kctl__rwlock *l, unsigned slot) { (void)l; (void)slot; }
static void kctl__rwlock_wr(kctl__rwlock *l) { (void)l; }
static void kctl__rwlock_wr_unlock(kctl__rwlock *l) { (void)l; }
typedef struct kctl__mutex { int unused; } kctl__mutex;
typedef struct kctl__cond { int unused; } kctl__cond;
static int kctl__mutex_init(kctl__mutex *m) { (void)m; return KCTL_OK; }
static void kctl__mutex_deinit(kctl__mutex *m) { (void)m; }
static void kctl__mutex_lock(kctl__mutex *m) { (void)m; }
static void kctl__mutex_unlock(kctl__mutex *m) { (void)m; }
static int kctl__cond_init(kctl__cond *c) { (void)c; return KCTL_OK; }
static void kctl__cond_deinit(kctl__cond *c) { (void)c; }
KCTL__UNUSED static inline void kctl__cond_wait(kctl__cond *c, kctl__mutex *m) { (void)c; (void)m; }
KCTL__UNUSED static inline void kctl__cond_wait_for(kctl__cond *c, kctl__mutex *m, uint64_t rel_ns) { (void)c; (void)m; (void)rel_ns; }
static void kctl__cond_signal(kctl__cond *c) { (void)c; }
static void kctl__cond_broadcast(kctl__cond *c) { (void)c; }
KCTL__UNUSED static inline void kctl__cpu_relax(void) { }
KCTL__UNUSED static inline void kctl__yield(void) { }
#endif

static void *kctl__alloc(const kctl_allocator *a, size_t size);
static void kctl__free(const kctl_allocator *a, void *p);

/* ---- files: a port to a system without them sets KCTL_NO_FILES. */
#ifndef KCTL_NO_FILES
/* The file that path names: path itself when it is no symbolic link (or
   nothing is there yet), else where its chain of links ends (a relative
   link from the link's directory; 40 links at most), in a new string.
   OK; IO for a loop, an unreadable or overlong link; NOMEM. */
static int kctl__port_file_target(const char *path, const kctl_allocator *a, char **out) {
    size_t n = strlen(path);
    char *cur = (char *)kctl__alloc(a, n + 1);
    int hops;
    *out = NULL;
    if (!cur) return KCTL_ERR_NOMEM;
    memcpy(cur, path, n + 1);
    for (hops = 0;; hops++) {
        struct stat sb;
        char link[4096], *next;
        const char *slash;
        size_t dl;
        ssize_t k;
        if (lstat(cur, &sb) != 0 || !S_ISLNK(sb.st_mode)) break;
        k = hops < 40 ? readlink(cur, link, sizeof link) : -1;
        if (k <= 0 || (size_t)k >= sizeof link) {
            kctl__free(a, cur);
            return KCTL_ERR_IO;
        }
        slash = strrchr(cur, '/');
        dl = link[0] != '/' && slash ? (size_t)(slash - cur) + 1 : 0;
        if (!(next = (char *)kctl__alloc(a, dl + (size_t)k + 1))) {
            kctl__free(a, cur);
            return KCTL_ERR_NOMEM;
        }
        memcpy(next, cur, dl);
        memcpy(next + dl, link, (size_t)k);
        next[dl + (size_t)k] = '\0';
        kctl__free(a, cur);
        cur = next;
    }
    *out = cur;
    return KCTL_OK;
}

/* The whole file at path into a new buffer (NUL-terminated; *len without
   the NUL): OK; NOT_FOUND only when nothing is at path (a missing file or
   directory; a link to nothing is there, so it is not); IO when something
   is there that cannot be read as a file: no permission, no descriptor
   left, a loop of links, a directory, anything but a regular file (a FIFO
   is not waited on, a device not read); TOO_LARGE past 2 GiB; NOMEM. */
static KCTL__UNUSED int kctl__port_file_read(const char *path, const kctl_allocator *a, char **out, size_t *len) {
    int fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
    struct stat sb;
    char *buf = NULL;
    size_t cap = 0, n = 0;
    *out = NULL;
    *len = 0;
    if (fd < 0) return errno == ENOENT && lstat(path, &sb) != 0 ? KCTL_ERR_NOT_FOUND : KCTL_ERR_IO;
    if (fstat(fd, &sb) != 0 || !S_ISREG(sb.st_mode)) {
        close(fd);
        return KCTL_ERR_IO;
    }
    for (;;) {
        ssize_t k;
        if (n == cap) {
            size_t ncap = cap ? cap * 2 : 65536;
            char *nb;
            if (ncap > (size_t)1 << 31 || !(nb = (char *)kctl__alloc(a, ncap + 1))) {
                kctl__free(a, buf);
                close(fd);
                return ncap > (size_t)1 << 31 ? KCTL_ERR_TOO_LARGE : KCTL_ERR_NOMEM;
            }
            if (n) memcpy(nb, buf, n);
            kctl__free(a, buf);
            buf = nb;
            cap = ncap;
        }
        k = read(fd, buf + n, cap - n);
        if (k < 0 && errno == EINTR) continue;
        if (k < 0) {
            kctl__free(a, buf);
            close(fd);
            return KCTL_ERR_IO;
        }
        if (k == 0) break;
        n += (size_t)k;
    }
    close(fd);
    buf[n] = '\0';
    *out = buf;
    *len = n;
    return KCTL_OK;
}

/* Replace the file at path (the end of its links: a link stays a link)
   with data[0..len), atomically and durably: a temporary file beside it
   ("<file>.tmp") is written and fsynced, renamed over the file, and the
   directory fsynced. OK: done. IO with *replaced false: nothing changed,
   the old file stays whole. IO with *replaced true: the file holds data,
   but the directory could not be synced (or opened to be), so a crash
   may still bring back the old one. NOMEM. */
static KCTL__UNUSED int kctl__port_file_replace(const char *path, const kctl_allocator *a, const char *data, size_t len, bool *replaced) {
    char *target = NULL, *tmp;
    size_t tlen, i;
    int fd, rc;
    *replaced = false;
    if ((rc = kctl__port_file_target(path, a, &target)) != KCTL_OK) return rc;
    tlen = strlen(target);
    if (!(tmp = (char *)kctl__alloc(a, tlen + 5))) {
        kctl__free(a, target);
        return KCTL_ERR_NOMEM;
    }
    memcpy(tmp, target, tlen);
    memcpy(tmp + tlen, ".tmp", 5);
    fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    if (fd < 0) rc = KCTL_ERR_IO;
    for (i = 0; rc == KCTL_OK && i < len;) {
        ssize_t k = write(fd, data + i, len - i);
        if (k < 0 && errno == EINTR) continue;
        if (k <= 0) rc = KCTL_ERR_IO;
        else i += (size_t)k;
    }
    if (fd >= 0 && fsync(fd) != 0) rc = KCTL_ERR_IO;
    if (fd >= 0 && close(fd) != 0) rc = KCTL_ERR_IO;
    if (rc == KCTL_OK && rename(tmp, target) != 0) rc = KCTL_ERR_IO;
    if (rc == KCTL_OK) { /* make the rename itself durable */
        const char *slash = strrchr(target, '/');
        int dfd;
        *replaced = true;
        if (slash) {
            memcpy(tmp, target, (size_t)(slash - target));
            tmp[slash == target ? 1 : slash - target] = '\0';
            dfd = open(tmp, O_RDONLY | O_CLOEXEC);
        } else {
            dfd = open(".", O_RDONLY | O_CLOEXEC);
        }
        /* a file system that cannot sync a directory says EINVAL: nothing to wait for */
        if (dfd < 0 || (fsync(dfd) != 0 && errno != EINVAL)) rc = KCTL_ERR_IO;
        if (dfd >= 0) close(dfd);
    } else if (fd >= 0) {
        unlink(tmp);
    }
    kctl__free(a, tmp);
    kctl__free(a, target);
    return rc;
}
#endif

/* ------------------------------------------------------ >>version VERSION */
KCTL_API const char *kctl_version(void) { return KCTL_VERSION_STRING; }

/* ------------------------------------------------- >>results RESULT CODES */
KCTL_API const char *kctl_strerror(int code) {
    /* the texts in an object of this function's own, not as literals: a
       literal lands where others do and is kept wherever any of those is
       used, so a build that never calls this would keep them all */
#define KCTL__RESULT_FIELD(id, v, msg, next) char t_##id[sizeof msg]; /* (t_: no clash with a platform's OK macro) */
#define KCTL__RESULT_TEXT(id, v, msg, next) msg,
    static const struct { KCTL_RESULTS(KCTL__RESULT_FIELD) char unknown[14]; } text = { KCTL_RESULTS(KCTL__RESULT_TEXT) "unknown error" };
#undef KCTL__RESULT_FIELD
#undef KCTL__RESULT_TEXT
    switch (code) {
#define KCTL__RESULT_CASE(id, v, msg, next) case KCTL_##id: return text.t_##id;
    KCTL_RESULTS(KCTL__RESULT_CASE)
#undef KCTL__RESULT_CASE
    default: return text.unknown;
    }
}

/* ---------------------------------------------- >>alloc ALLOCATOR, LOGGER */
static void *kctl__alloc(const kctl_allocator *a, size_t size) {
    if (a && a->alloc_fn) return a->alloc_fn(size, a->user_data);
    return KCTL_MALLOC(size, a ? a->user_data : NULL);
}
static void kctl__free(const kctl_allocator *a, void *p) {
    if (!p) return;
    if (a && a->free_fn) a->free_fn(p, a->user_data);
    else KCTL_FREE(p, a ? a->user_data : NULL);
}

#ifndef KCTL_NO_LOG_STRINGS
#define KCTL__LOGITEM_STR(id, msg) msg,
static const char *const kctl__log_messages[] = { KCTL_LOG_ITEMS(KCTL__LOGITEM_STR) "" };
#undef KCTL__LOGITEM_STR
#endif
static void kctl__log(const kctl_logger *l, int level, kctl_log_item item) {
    if (!l || !l->func) return;
#ifndef KCTL_NO_LOG_STRINGS
    l->func(level, (uint32_t)item, kctl__log_messages[item], l->user_data);
#else
    l->func(level, (uint32_t)item, NULL, l->user_data);
#endif
}

/* --------------------------------------------------- >>text TEXT AND SORT */
/* The string functions kctl calls, under -Os (__OPTIMIZE_SIZE__) as
   byte loops of kctl's own: a firmware's C library (newlib's) brings
   word-at-a-time versions of 130 to 730 bytes each (strcmp alone is 732
   on a Cortex-M4), for texts kctl keeps short (keys, names, versions).
   Otherwise, or with KCTL_LIBC_STRINGS, the C library's, as fast as it
   has them. The same results either way (strcmp's sign compares the
   bytes as unsigned char). */
#if defined(__OPTIMIZE_SIZE__) && !defined(KCTL_LIBC_STRINGS)
#define KCTL__OWN_STRINGS 1
#endif
#if defined(KCTL__OWN_STRINGS) || defined(KCTL__WORK_COUNTER)
static KCTL__UNUSED int kctl__own_strncmp(const char *a, const char *b, size_t n) {
    const unsigned char *x = (const unsigned char *)a, *y = (const unsigned char *)b;
    for (; n && *x && *x == *y; n--) x++, y++;
    return n ? *x - *y : 0;
}
static KCTL__UNUSED int kctl__own_strcmp(const char *a, const char *b) {
    return kctl__own_strncmp(a, b, (size_t)-1);
}
static KCTL__UNUSED size_t kctl__own_strlen(const char *s) {
    const char *e = s;
    while (*e) e++;
    return (size_t)(e - s);
}
static KCTL__UNUSED const char *kctl__own_strchr(const char *s, int c) {
    for (; *s != (char)c; s++)
        if (!*s) return NULL;
    return s;
}
static KCTL__UNUSED int kctl__own_memcmp(const void *a, const void *b, size_t n) {
    const unsigned char *x = (const unsigned char *)a, *y = (const unsigned char *)b;
    for (; n; n--, x++, y++)
        if (*x != *y) return *x - *y;
    return 0;
}
static KCTL__UNUSED const void *kctl__own_memchr(const void *s, int c, size_t n) {
    const unsigned char *p = (const unsigned char *)s;
    for (; n; n--, p++)
        if (*p == (unsigned char)c) return p;
    return NULL;
}
/* (memcpy: on 32-bit processors only, where the C library's is big
   (newlib's: 308 B on a Cortex-M4) and kctl's copies are short. There
   kctl copies its options structs by call, not by assignment, which the
   compiler would make a call to the C library's. A copy of a fixed few
   bytes (an unaligned read, a double's bits) stays memcpy: the compiler
   makes it a load, never a call.) */
static KCTL__UNUSED void *kctl__own_memcpy(void *dst, const void *src, size_t n) {
    unsigned char *d = (unsigned char *)dst;
    const unsigned char *s = (const unsigned char *)src;
    while (n--) *d++ = *s++;
    return dst;
}
static KCTL__UNUSED void kctl__own_memmove(void *dst, const void *src, size_t n) {
    unsigned char *d = (unsigned char *)dst;
    const unsigned char *s = (const unsigned char *)src;
    if (d < s)
        while (n--) *d++ = *s++;
    else
        while (n--) d[n] = s[n];
}
#endif
#ifdef KCTL__OWN_STRINGS
#define kctl__strncmp kctl__own_strncmp
#define kctl__strcmp kctl__own_strcmp
#define kctl__strlen kctl__own_strlen
#define kctl__strchr kctl__own_strchr
#define kctl__memmove kctl__own_memmove
#define kctl__memcmp kctl__own_memcmp
#define kctl__memchr kctl__own_memchr
#if UINTPTR_MAX <= 0xffffffffu
#define kctl__memcpy kctl__own_memcpy
#else
#define kctl__memcpy memcpy
#endif
#else
#define kctl__strncmp strncmp
#define kctl__strcmp strcmp
#define kctl__strlen strlen
#define kctl__strchr strchr
#define kctl__memmove memmove
#define kctl__memcmp memcmp
#define kctl__memchr memchr
#define kctl__memcpy memcpy
#endif
/* n / d, and n % d in *rem (d > 0). A 32-bit target has no 64-bit
   division: the compiler calls libgcc's (__aeabi_uldivmod and
   __udivmoddi4: 0.8 KB on a Cortex-M4). There, under -Os, kctl divides
   in 32 bits when both fit (resource versions, rates, times' parts: the
   common case) and otherwise by shift and subtract; elsewhere it divides. */
#if defined(KCTL__OWN_STRINGS) && UINTPTR_MAX <= 0xffffffffu
#define KCTL__OWN_DIV 1
#endif
#if defined(KCTL__OWN_DIV) || defined(KCTL__WORK_COUNTER)
static KCTL__UNUSED uint64_t kctl__own_udiv64(uint64_t n, uint64_t d, uint64_t *rem) {
    uint64_t q = 0, r = 0;
    int i;
    if (!(n >> 32) && !(d >> 32)) {
        q = (uint32_t)n / (uint32_t)d;
        r = (uint32_t)n - (uint32_t)q * (uint32_t)d;
    } else {
        for (i = 63; i >= 0; i--) { /* r <= n >> (i + 1) < 2^63 here: the shift never carries out */
            r = r << 1 | (n >> i & 1);
            if (r >= d) {
                r -= d;
                q |= (uint64_t)1 << i;
            }
        }
    }
    if (rem) *rem = r;
    return q;
}
#endif
#ifdef KCTL__OWN_DIV
#define kctl__udiv64 kctl__own_udiv64
#else
static KCTL__UNUSED uint64_t kctl__udiv64(uint64_t n, uint64_t d, uint64_t *rem) {
    if (rem) *rem = n % d;
    return n / d;
}
#endif
/* u in decimal, written backwards so it ends just before end (20 bytes
   are room enough): returns its first digit. */
static KCTL__UNUSED char *kctl__dec(char *end, uint64_t u) {
    uint64_t digit;
    do {
        u = kctl__udiv64(u, 10, &digit);
        *--end = (char)('0' + digit);
    } while (u);
    return end;
}
/* v's last w decimal digits at p[0..w), zero first (%0wu for a v of up to
   w digits): p + w. */
static KCTL__UNUSED char *kctl__dec_w(char *p, uint32_t v, int w) {
    int i;
    for (i = w; i-- > 0; v /= 10) p[i] = (char)('0' + v % 10);
    return p + w;
}

/* s (not NULL) into buf[0..cap) as kctl__fmt(buf, cap, "%s", s) puts it:
   cut to cap - 1 bytes, NUL-terminated, nothing with cap 0. The copies
   of versions and names a minimal program makes, without the formatter. */
static KCTL__UNUSED void kctl__scopy(char *buf, size_t cap, const char *s) {
    size_t n = 0;
    if (!cap) return;
    for (; n + 1 < cap && s[n]; n++) buf[n] = s[n];
    buf[n] = '\0';
}

#ifdef KCTL__WORK_COUNTER
KCTL_API int kctl__test_own_str(int fn, const char *a, const char *b, size_t n) {
    switch (fn) {
    case 0: return kctl__own_strcmp(a, b);
    case 1: return kctl__own_strncmp(a, b, n);
    case 2: return (int)kctl__own_strlen(a);
    case 3: { const char *r = kctl__own_strchr(a, (unsigned char)n); return r ? (int)(r - a) : -1; }
    case 5: return kctl__own_memcmp(a, b, n);
    case 6: { const char *r = (const char *)kctl__own_memchr(a, (unsigned char)*b, n); return r ? (int)(r - a) : -1; }
    case 7: return kctl__own_memcpy((void *)(uintptr_t)a, b, n) == a ? 0 : -1;
    default: kctl__own_memmove((void *)(uintptr_t)a, b, n); return 0;
    }
}
KCTL_API uint64_t kctl__test_own_udiv64(uint64_t n, uint64_t d, uint64_t *rem) {
    return kctl__own_udiv64(n, d, rem);
}
#endif

/* kctl's own formatting and sorting, so the implementation needs no printf
   and no qsort (see LIBC in the doc block). kctl__fmt is snprintf for the
   conversions kctl writes: %s (with a precision: %.*s, %.3s), %c, %%, and
   %d %u %x with the length modifiers l, ll and z, a width and the flags
   '0' and '-'. Anything else writes nothing for the conversion (the
   compiler checks kctl's own format strings). It returns the length the
   whole text has, as snprintf does, and writes at most cap - 1 bytes and
   a NUL (nothing with cap 0). */
#if defined(__GNUC__) || defined(__clang__)
#define KCTL__PRINTF(f, a) __attribute__((format(printf, f, a)))
#else
#define KCTL__PRINTF(f, a)
#endif
/* Small builds keep a helper that many places call out of line where
   gcc's -Os estimate would copy its argument set-up into each of them. */
#if KCTL_SMALL && (defined(__GNUC__) || defined(__clang__))
#define KCTL__SMALL_CALL __attribute__((noinline))
#else
#define KCTL__SMALL_CALL
#endif
/* On 32-bit processors, where a call is short (Thumb's is 4 bytes) and
   registers are few, small builds keep a few more helpers out of line:
   x86-64's -Os code of those is shorter copied into each caller. The
   other way (KCTL__SMALL_INLINE32), a few short ones are copied into
   their callers, where gcc's -Os estimate keeps a call whose argument
   set-up, prologue and return cost more there than the body. */
#if KCTL_SMALL && (defined(__GNUC__) || defined(__clang__)) && UINTPTR_MAX <= 0xffffffffu
#define KCTL__SMALL_CALL32 __attribute__((noinline))
#define KCTL__SMALL_INLINE32 __attribute__((always_inline)) inline
#else
#define KCTL__SMALL_CALL32
#define KCTL__SMALL_INLINE32
#endif

static void kctl__fmt_put(char *buf, size_t cap, size_t *n, const char *s, size_t len) {
    if (*n < cap) kctl__memcpy(buf + *n, s, cap - *n - 1 < len ? cap - *n - 1 : len);
    *n += len;
}

static int kctl__vfmt(char *buf, size_t cap, const char *fmt, va_list ap) {
    size_t n = 0;
    const char *f = fmt;
    while (*f) {
        char num[24], *p = num + sizeof num, pad = ' ', conv;
        const char *s = f;
        size_t sl = 0, width = 0;
        int prec = -1, lng = 0;
        bool left = false;
        uint64_t u;
        while (*f && *f != '%') f++;
        if (f > s) {
            kctl__fmt_put(buf, cap, &n, s, (size_t)(f - s));
            continue;
        }
        for (f++; *f == '-' || *f == '0'; f++) {
            if (*f == '-') left = true;
            else pad = '0';
        }
        while (*f >= '0' && *f <= '9') width = width * 10 + (size_t)(*f++ - '0');
        if (*f == '.') {
            if (*++f == '*') {
                prec = va_arg(ap, int);
                f++;
            } else {
                for (prec = 0; *f >= '0' && *f <= '9'; f++) prec = prec * 10 + (*f - '0');
            }
        }
        for (; *f == 'l' || *f == 'z'; f++) lng = *f == 'z' ? 3 : lng + 1;
        conv = *f ? *f++ : '\0';
        if (conv == 's') {
            s = va_arg(ap, const char *);
            if (!s) s = "(null)";
            while ((prec < 0 || sl < (size_t)prec) && s[sl]) sl++;
            pad = ' ';
        } else if (conv == 'c' || conv == '%') {
            *--p = conv == 'c' ? (char)va_arg(ap, int) : '%';
            if (conv == 'c') pad = ' ';
        } else if (conv == 'd' || conv == 'u' || conv == 'x') {
            bool neg = false;
            if (conv == 'd') {
                int64_t v = lng >= 2 ? (int64_t)va_arg(ap, long long) : lng == 1 ? (int64_t)va_arg(ap, long) : (int64_t)va_arg(ap, int);
                neg = v < 0;
                u = neg ? (uint64_t)0 - (uint64_t)v : (uint64_t)v;
            } else {
                u = lng == 3 ? (uint64_t)va_arg(ap, size_t) : lng == 2 ? (uint64_t)va_arg(ap, unsigned long long)
                    : lng == 1 ? (uint64_t)va_arg(ap, unsigned long) : (uint64_t)va_arg(ap, unsigned);
            }
            do {
                uint64_t digit;
                u = kctl__udiv64(u, conv == 'x' ? 16 : 10, &digit);
                *--p = "0123456789abcdef"[digit];
            } while (u);
            if (neg) { /* zero padding goes after the sign, spaces before it */
                if (pad != '0') *--p = '-';
                else {
                    kctl__fmt_put(buf, cap, &n, "-", 1);
                    if (width) width--;
                }
            }
        }
        if (conv != 's') { /* the text made in num (nothing for a conversion not kctl's) */
            s = p;
            sl = (size_t)(num + sizeof num - p);
        }
        if (left) { /* the text, then spaces; else the padding first */
            kctl__fmt_put(buf, cap, &n, s, sl);
            pad = ' ';
        }
        for (; width > sl; width--) kctl__fmt_put(buf, cap, &n, &pad, 1);
        if (!left) kctl__fmt_put(buf, cap, &n, s, sl);
    }
    if (cap) buf[n < cap ? n : cap - 1] = '\0';
    return n > (size_t)INT32_MAX ? -1 : (int)n;
}

static KCTL__PRINTF(3, 4) int kctl__fmt(char *buf, size_t cap, const char *fmt, ...) {
    va_list ap;
    int n;
    va_start(ap, fmt);
    n = kctl__vfmt(buf, cap, fmt, ap);
    va_end(ap);
    return n;
}

#ifdef KCTL__WORK_COUNTER
KCTL_API int kctl__test_fmt(char *buf, size_t cap, const char *fmt, ...) {
    va_list ap;
    int n;
    va_start(ap, fmt);
    n = kctl__vfmt(buf, cap, fmt, ap);
    va_end(ap);
    return n;
}
#endif

/* Sort n elements of size bytes at base by cmp, as qsort does (not
   stable): a heap sort, in place, no memory, O(n log n) at worst. */
static void kctl__sort_swap(unsigned char *a, unsigned char *b, size_t size) {
    while (size--) {
        unsigned char t = *a;
        *a++ = *b;
        *b++ = t;
    }
}
static void kctl__sort_sift(unsigned char *base, size_t root, size_t n, size_t size, int (*cmp)(const void *, const void *)) {
    for (;;) {
        size_t child = 2 * root + 1;
        if (child >= n) return;
        if (child + 1 < n && cmp(base + child * size, base + (child + 1) * size) < 0) child++;
        if (cmp(base + root * size, base + child * size) >= 0) return;
        kctl__sort_swap(base + root * size, base + child * size, size);
        root = child;
    }
}
static KCTL__UNUSED void kctl__sort(void *base, size_t n, size_t size, int (*cmp)(const void *, const void *)) {
    unsigned char *b = (unsigned char *)base;
    size_t i;
    if (n < 2) return;
    for (i = n / 2; i-- > 0;) kctl__sort_sift(b, i, n, size, cmp);
    for (i = n - 1; i > 0; i--) {
        kctl__sort_swap(b, b + i * size, size);
        kctl__sort_sift(b, 0, i, size, cmp);
    }
}

/* ---------------------------------------------------------- >>map KEY MAP */
/* A string-keyed open-addressing hash map (linear probing, backward-shift
   deletion, so no tombstones under churn) of intrusive nodes. It stores
   pointers; the nodes and their keys belong to the caller.

   Layout, for lookups that miss the cache: one block holds cap node
   pointers (8 bytes a slot) and after them cap tag bytes, a tag being 8
   bits of the key's hash (never 0: 0 is an empty slot). A lookup probes
   the tags (64 slots a cache line, a small array that stays cached) and
   reads a slot's pointer, and its node, only where the tag matches (a
   wrong match: 1 in 255 occupied slots probed). The pointers are half of
   what (hash, pointer) slots took, so a map of 100,000 keys keeps its
   random reads within 1.1 MB instead of 2 MB: on a machine whose caches
   and TLB are shared, that one read dominated a get by key. A node's full
   hash (in the node) is checked before its key; growth reads it there
   too. Fast builds keep, after the tags, each slot's distance from the
   slot its hash names (a byte, 255: that far or more): a deletion's
   backward shift decides from them which later members of the probe run
   move, where reading each one's node cost a cache miss apiece. */
typedef struct kctl__node {
    const char *key;
    uint32_t len;
    uint32_t hash;
} kctl__node;

typedef struct kctl__slot {
    kctl__node *node;
} kctl__slot;

#define KCTL__MAP_DIST (!KCTL_SMALL) /* the distance bytes (small builds: none; a deletion reads the nodes) */

typedef struct kctl__map {
    kctl__slot *slots; /* cap slots, then the cap tags (then the cap distances): one block */
    unsigned char *tags;
    size_t cap; /* 0 or a power of two */
    size_t count;
    /* Copies of tags and cap-1, written under the owner's lock with a
       relaxed atomic store, read without it only to prefetch before
       locking (a prefetch of a stale address is harmless). */
    unsigned char *tags_hint;
    size_t mask_hint;
} kctl__map;

/* The tag of a hash: its top 8 bits, 0 made 1. The slot comes from the
   low bits, so the tag adds bits the position does not already say. */
static inline unsigned char kctl__map_tag(uint32_t h) {
    unsigned char t = (unsigned char)(h >> 24);
    return (unsigned char)(t + (t == 0));
}

/* Start loading the tags where hash h would live, and the slot, without
   holding the lock. */
static inline void kctl__map_prefetch(const kctl__map *m, uint32_t h) {
#ifdef KCTL__HINTS
    unsigned char *t = KCTL__LOAD(&m->tags_hint);
    size_t mask = KCTL__LOAD(&m->mask_hint);
    if (t) {
        KCTL__PREFETCH(&t[h & mask]);
        KCTL__PREFETCH((kctl__slot *)(void *)t - (mask + 1) + (h & mask));
    }
#else
    (void)m;
    (void)h;
#endif
}

/* Length of a key, or 0 when NULL, empty or longer than KCTL_MAX_KEY_LEN. */
static size_t kctl__key_len(const char *key) {
    size_t n = 0;
    if (!key) return 0;
    /* A byte loop: keys are short, and memchr over the whole bound costs
       more than the key (it was 4 to 11% of a queue add). */
    while (key[n]) {
        if (++n > (size_t)KCTL_MAX_KEY_LEN) return 0;
    }
    return n;
}

#if !KCTL_SMALL /* (the small builds' hash reads bytes) */
/* 8 bytes, 4 bytes at p (unaligned). */
static inline uint64_t kctl__rd64(const char *p) {
    uint64_t v;
    memcpy(&v, p, 8);
    return v;
}
static inline uint64_t kctl__rd32(const char *p) {
    uint32_t v;
    memcpy(&v, p, 4);
    return v;
}
#endif

/* The tail (n % 8 bytes, or a key shorter than 8) is read with whole
   loads that may overlap bytes already mixed, not byte by byte: a
   byte-wise copy into a word costs a stalled load (store forwarding
   fails) on every hash. Values differ between byte orders; hashes never
   leave the process. */
static uint32_t kctl__hash(const char *s, size_t n) {
#if KCTL_SMALL
    /* small builds: FNV-1a a byte at a time, then murmur3's finalizer so
       that the low bits (the slot) and the top 8 (the tag) both depend on
       every byte; no 64-bit multiplies (a 32-bit processor makes each of
       those several instructions). Maps only ever compare hashes with
       hashes of the same build. */
    uint32_t h = 2166136261u;
    size_t i;
    for (i = 0; i < n; i++) h = (h ^ (unsigned char)s[i]) * 16777619u;
    h ^= h >> 16;
    h *= 0x85ebca6bu;
    h ^= h >> 13;
    h *= 0xc2b2ae35u;
    return h ^ (h >> 16);
#else
    uint64_t h = UINT64_C(0x9e3779b97f4a7c15) ^ (uint64_t)n;
    uint64_t v;
    size_t left = n;
    while (left >= 8) {
        h = (h ^ kctl__rd64(s)) * UINT64_C(0xff51afd7ed558ccd);
        h ^= h >> 32;
        s += 8;
        left -= 8;
    }
    if (left == 0) v = 0;
    else if (n >= 8) v = kctl__rd64(s + left - 8); /* the last 8 bytes */
    else if (n >= 4) v = kctl__rd32(s) | kctl__rd32(s + n - 4) << 32;
    else v = (uint64_t)(unsigned char)s[0] | (uint64_t)(unsigned char)s[n / 2] << 8 | (uint64_t)(unsigned char)s[n - 1] << 16;
    h = (h ^ v) * UINT64_C(0xc4ceb9fe1a85ec53);
    h ^= h >> 29;
    h *= UINT64_C(0xff51afd7ed558ccd);
    h ^= h >> 32;
    return (uint32_t)h;
#endif
}

/* Whether a[0..n) and b[0..n) are equal: keys of 4 to 64 bytes (most)
   in whole loads, the last one overlapping the one before, not a call
   to memcmp (its call and dispatch were a sixth of a cache get). */
static inline bool kctl__key_eq(const char *a, const char *b, size_t n) {
#if !KCTL_SMALL
    if (n >= 8 && n <= 64) {
        uint64_t d = kctl__rd64(a + n - 8) ^ kctl__rd64(b + n - 8);
        size_t i;
        for (i = 0; i + 8 < n; i += 8) d |= kctl__rd64(a + i) ^ kctl__rd64(b + i);
        return d == 0;
    }
    if (n >= 4 && n < 8) return ((kctl__rd32(a) ^ kctl__rd32(b)) | (kctl__rd32(a + n - 4) ^ kctl__rd32(b + n - 4))) == 0;
#endif
    return kctl__memcmp(a, b, n) == 0;
}

static kctl__node *kctl__map_find(const kctl__map *m, const char *key, size_t len, uint32_t hash) {
    size_t mask, i;
    unsigned char tag = kctl__map_tag(hash), t;
    if (!m->count) return NULL;
    mask = m->cap - 1;
    for (i = hash & mask; (t = m->tags[i]) != 0; i = (i + 1) & mask) {
        if (KCTL_SMALL || t == tag) { /* (small builds: the node's full hash alone) */
            kctl__node *n = m->slots[i].node;
            /* Keys mostly lie right after their node (objects, queue
               entries), often on the next cache line: start loading it
               while the node's own line arrives, not after. */
            KCTL__PREFETCH((const char *)n + 64);
            if (n->hash == hash && n->len == len && kctl__key_eq(n->key, key, len)) return n;
        }
    }
    return NULL;
}

static void kctl__map_place(kctl__slot *slots, unsigned char *tags, size_t cap, kctl__node *n) {
    size_t mask = cap - 1, i, d = 0;
    for (i = n->hash & mask; tags[i]; i = (i + 1) & mask) d++;
    tags[i] = kctl__map_tag(n->hash);
    if (KCTL__MAP_DIST) tags[cap + i] = (unsigned char)(d < 255 ? d : 255);
    slots[i].node = n;
}

static int kctl__map_resize(kctl__map *m, const kctl_allocator *a, size_t cap) {
    kctl__slot *s = (kctl__slot *)kctl__alloc(a, cap * (sizeof *s + 1 + KCTL__MAP_DIST));
    unsigned char *t;
    size_t i;
    if (!s) return KCTL_ERR_NOMEM;
    t = (unsigned char *)(s + cap);
    memset(s, 0, cap * (sizeof *s + 1)); /* empty slots hold NULL: walks read them (a distance is written with its tag) */
    for (i = 0; i < m->cap; i++) {
        /* The nodes lie anywhere and their new slots too: a node is
           asked for 16 slots ahead and its new slot 8 ahead (its hash
           there by then), so the misses overlap instead of following
           one another (1.5 million keys' growth: about a third faster). */
        if (!KCTL_SMALL && i + 16 < m->cap && m->slots[i + 16].node) KCTL__PREFETCH(m->slots[i + 16].node);
        if (!KCTL_SMALL && i + 8 < m->cap && m->slots[i + 8].node) {
            size_t h = m->slots[i + 8].node->hash & (cap - 1);
            KCTL__PREFETCH(&t[h]);
            KCTL__PREFETCH(&s[h]);
        }
        if (m->tags[i]) kctl__map_place(s, t, cap, m->slots[i].node);
    }
    kctl__free(a, m->slots);
    m->slots = s;
    m->tags = t;
    m->cap = cap;
#ifdef KCTL__HINTS
    KCTL__STORE(&m->tags_hint, t);
    KCTL__STORE(&m->mask_hint, cap - 1);
#endif
    return KCTL_OK;
}

/* Make room for one more node, so that the insert that follows cannot
   fail, keeping the map at most sixteenths/16 full. */
static int kctl__map_reserve_to(kctl__map *m, const kctl_allocator *a, unsigned sixteenths) {
    if ((m->count + 1) * 16 <= m->cap * sixteenths) return KCTL_OK;
    return kctl__map_resize(m, a, m->cap ? m->cap * 2 : 16);
}
static int kctl__map_reserve(kctl__map *m, const kctl_allocator *a) { return kctl__map_reserve_to(m, a, 12); }

/* Insert n (not present; after a successful reserve). */
static void kctl__map_insert(kctl__map *m, kctl__node *n) {
    kctl__map_place(m->slots, m->tags, m->cap, n);
    m->count++;
}

/* Take n out, keeping the table (the queue shrinks its own when idle). */
static void kctl__map_unlink(kctl__map *m, kctl__node *n) {
    size_t mask = m->cap - 1, i, j;
    unsigned char tag = kctl__map_tag(n->hash);
#if KCTL_SMALL
    /* small builds: n's slot emptied, then the rest of its probe run
       placed again (each where a lookup would find it; no test of where
       its home is) */
    kctl__node *x;
    (void)j;
    (void)tag;
    for (i = n->hash & mask; m->slots[i].node != n; i = (i + 1) & mask) { }
    do {
        x = m->slots[i].node;
        m->tags[i] = 0;
        m->slots[i].node = NULL;
        if (x != n) kctl__map_place(m->slots, m->tags, m->cap, x);
        i = (i + 1) & mask;
    } while (m->tags[i]);
#else
    /* The tags first: the pointers' slots are 8 times the memory. */
    for (i = n->hash & mask; m->tags[i] != tag || m->slots[i].node != n; i = (i + 1) & mask) { }
    /* Backward shift: pull later members of the probe run into the hole
       unless their home slot lies cyclically in (i, j], that is unless
       they are nearer to it than the hole is. */
    unsigned char *dist = m->tags + m->cap;
    for (j = (i + 1) & mask; m->tags[j]; j = (j + 1) & mask) {
        size_t gap = (j - i) & mask, d = dist[j];
        if (d == 255) d = (j - (m->slots[j].node->hash & mask)) & mask; /* that far or more: the node says */
        if (d < gap) continue;
        m->slots[i] = m->slots[j];
        m->tags[i] = m->tags[j];
        dist[i] = (unsigned char)(d - gap < 255 ? d - gap : 255);
        i = j;
    }
    m->tags[i] = 0;
    m->slots[i].node = NULL;
#endif
    m->count--;
}

/* The capacity for count nodes after a shrink: at least 64, loaded a
   quarter to a half. */
static size_t kctl__map_fit(size_t cap, size_t count) {
    while (cap > 64 && count * 4 < cap) cap /= 2;
    return cap;
}

/* Shrink a table left mostly empty after a burst (best effort): below a
   sixteenth full, in one step to a quarter or more. Growth (at three
   quarters) is twelve times as many keys away, so a map whose keys come
   and go in waves (a FIFO, a queue) does not shrink and grow with each. */
static void kctl__map_remove(kctl__map *m, const kctl_allocator *a, kctl__node *n) {
    kctl__map_unlink(m, n);
    if (m->cap > 64 && m->count * 16 < m->cap) (void)kctl__map_resize(m, a, kctl__map_fit(m->cap, m->count));
}

#ifdef KCTL__WORK_COUNTER
/* Whether every occupied slot of m is reached from its home slot through
   occupied slots only, holds its distance from there (fast builds), and
   the count is right. */
static bool kctl__map_sound(const kctl__map *m) {
    size_t mask = m->cap - 1, i, k, n = 0;
    for (i = 0; i < m->cap; i++) {
        size_t home, d;
        if (!m->tags[i]) continue;
        n++;
        home = m->slots[i].node->hash & mask;
        d = (i - home) & mask;
        if (m->tags[i] != kctl__map_tag(m->slots[i].node->hash)) return false;
        if (KCTL__MAP_DIST && m->tags[m->cap + i] != (d < 255 ? d : 255)) return false;
        for (k = home; k != i; k = (k + 1) & mask)
            if (!m->tags[k]) return false;
    }
    return n == m->count;
}

KCTL_API uint32_t kctl__test_hash(const char *s, size_t n) { return kctl__hash(s, n); }
KCTL_API bool kctl__test_key_eq(const char *a, const char *b, size_t n) { return kctl__key_eq(a, b, n); }
KCTL_API long kctl__test_map_churn(uint32_t seed, uint32_t nkeys, uint32_t steps, uint32_t hash_mask) {
    kctl_allocator a;
    kctl__map m;
    kctl__node *nodes;
    char *keys;
    bool *in;
    uint32_t i, k, x = seed | 1u;
    long bad = 0;
    memset(&a, 0, sizeof a);
    memset(&m, 0, sizeof m);
    nodes = (kctl__node *)kctl__alloc(&a, (size_t)nkeys * sizeof *nodes);
    keys = (char *)kctl__alloc(&a, (size_t)nkeys * 12);
    in = (bool *)kctl__alloc(&a, nkeys ? nkeys : 1);
    if (!nodes || !keys || !in) bad = -1;
    if (!nkeys) steps = 0; /* nothing to step on */
    for (i = 0; !bad && i < nkeys; i++) {
        char *p = keys + (size_t)i * 12;
        kctl__fmt(p, 12, "k%u", (unsigned)i);
        nodes[i].key = p;
        nodes[i].len = (uint32_t)kctl__strlen(p);
        nodes[i].hash = kctl__hash(p, nodes[i].len) & hash_mask;
        in[i] = false;
    }
    for (i = 0; !bad && i < steps; i++) {
        x ^= x << 13; /* xorshift32 */
        x ^= x >> 17;
        x ^= x << 5;
        k = x % nkeys;
        if (in[k]) {
            kctl__map_remove(&m, &a, &nodes[k]);
            in[k] = false;
        } else if (kctl__map_reserve(&m, &a) != KCTL_OK) {
            bad = -1;
            break;
        } else {
            kctl__map_insert(&m, &nodes[k]);
            in[k] = true;
        }
        for (k = 0; k < nkeys; k++)
            if ((kctl__map_find(&m, nodes[k].key, nodes[k].len, nodes[k].hash) == &nodes[k]) != in[k]) break;
        if (k < nkeys || (m.cap && !kctl__map_sound(&m))) bad = (long)i + 1;
    }
    kctl__free(&a, m.slots);
    kctl__free(&a, nodes);
    kctl__free(&a, keys);
    kctl__free(&a, in);
    return bad;
}
#endif

/* Empty the map, keeping its table (the nodes are the caller's). */
static KCTL__UNUSED void kctl__map_clear(kctl__map *m) {
    if (!m->cap) return;
    memset(m->slots, 0, m->cap * sizeof *m->slots);
    memset(m->tags, 0, m->cap);
    m->count = 0;
}

/* ---------------------------------------------------------- >>clock CLOCK */
static uint64_t kctl__mono_now(void *user_data) {
    (void)user_data;
    return (uint64_t)(KCTL_PORT_NOW_NS());
}

/* ---- wall time as API objects write it (metav1.Time, metav1.MicroTime):
   us since the Unix epoch, RFC 3339 in UTC, years 0000-9999; civil
   calendar arithmetic, so no C library time zone code is involved. */
#define KCTL__TIME_US_MIN (INT64_C(-62167219200) * 1000000)       /* 0000-01-01T00:00:00Z */
#define KCTL__TIME_US_MAX (INT64_C(253402300800) * 1000000 - 1)   /* 9999-12-31T23:59:59.999999Z */

static bool kctl__time_leap(int64_t y) {
    int32_t v = (int32_t)y; /* 0 <= y <= 9999: 32-bit arithmetic (no 64-bit division on a 32-bit MCU) */
    return (v % 4 == 0 && v % 100 != 0) || v % 400 == 0;
}
static int kctl__time_mdays(int64_t y, int m) {
    static const int n[12] = { 31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31 };
    return n[m - 1] + (m == 2 && kctl__time_leap(y));
}
/* Days from 1970-01-01 to y-m-d (proleptic Gregorian, 0 <= y <= 9999:
   the days fit 32 bits). */
static int64_t kctl__time_days(int64_t y, int m, int d) {
    static const int before[12] = { 0, 31, 59, 90, 120, 151, 181, 212, 243, 273, 304, 334 };
    int32_t v = (int32_t)y, leaps = v > 0 ? (v - 1) / 4 - (v - 1) / 100 + (v - 1) / 400 + 1 : 0; /* in [0, y): year 0 is one */
    return (int64_t)365 * v + leaps + before[m - 1] + (m > 2 && kctl__time_leap(y)) + (d - 1) - 719528; /* 719528: 0000-01-01 to 1970-01-01 */
}

/* Day z (0: 0000-01-01), second s of it and frac us as RFC 3339 in UTC
   (kctl__time_format's text), for years 0000-9999: 32 bits do. */
static void kctl__time_write(uint32_t z, uint32_t s, uint32_t frac, bool micro, char buf[32]) {
    uint32_t era, doe, yoe, doy, mp, y, m, day;
    /* The date from the day count, in years that begin on March 1 (the
       leap day last) and eras of 400 years (146097 days): z counts from
       -0400-03-01, so that it is never negative. */
    z += 146097 - 60;                                            /* 0000-01-01 is 60 days before 0000-03-01 */
    era = z / 146097;
    doe = z - era * 146097;                                      /* the day of the era, [0, 146096] */
    yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365; /* its year, [0, 399] */
    doy = doe - (365 * yoe + yoe / 4 - yoe / 100);               /* the day of that year, [0, 365] */
    mp = (5 * doy + 2) / 153;                                    /* its month, March 0 ... February 11 */
    day = doy - (153 * mp + 2) / 5 + 1;
    m = mp < 10 ? mp + 3 : mp - 9;
    y = era * 400 + yoe + (m <= 2) - 400;
    { /* %04u-%02u-%02uT%02u:%02u:%02u, then .%06u if micro, then Z */
        uint32_t part[7];
        char *p = buf;
        int k;
        part[0] = y; part[1] = m; part[2] = day; part[3] = s / 3600; part[4] = s / 60 % 60; part[5] = s % 60;
        part[6] = frac;
        for (k = 0; k < (micro ? 7 : 6); k++) {
            if (k) *p++ = "--T::."[k - 1];
            p = kctl__dec_w(p, part[k], k == 0 ? 4 : k < 6 ? 2 : 6);
        }
        p[0] = 'Z';
        p[1] = '\0';
    }
}

/* us as RFC 3339 in UTC: with micro, exactly six fractional digits
   (client-go's RFC3339Micro, 2026-11-30T18:47:33.123456Z), else whole
   seconds (2026-11-30T18:47:33Z); clamped to 0000-9999. */
static KCTL__UNUSED void kctl__time_format(int64_t us, bool micro, char buf[32]) {
    uint64_t frac, sec, z;
    if (us < KCTL__TIME_US_MIN) us = KCTL__TIME_US_MIN;
    if (us > KCTL__TIME_US_MAX) us = KCTL__TIME_US_MAX;
    sec = kctl__udiv64((uint64_t)(us - KCTL__TIME_US_MIN), 1000000, &frac); /* from 0000-01-01: no negative division */
    z = kctl__udiv64(sec, 86400, &sec);
    kctl__time_write((uint32_t)z, (uint32_t)sec, (uint32_t)frac, micro, buf);
}

#ifdef KCTL__WORK_COUNTER
KCTL_API void kctl__test_time_format(int64_t us, bool micro, char buf[32]) {
    kctl__time_format(us, micro, buf);
}
#endif

/* Read an RFC 3339 time leniently: date, 'T', time with no fraction or 1
   to 9 fractional digits (beyond 6 truncated), then 'Z' or +hh:mm / -hh:mm.
   false if malformed or outside years 0000-9999 in UTC. */
static KCTL__UNUSED bool kctl__time_parse(const char *s, size_t n, int64_t *out) {
    static const int width[6] = { 4, 2, 2, 2, 2, 2 };
    static const char sep[5] = { '-', '-', 'T', ':', ':' };
    int64_t v[6], frac = 0, off = 0, us;
    size_t i = 0;
    int k, c, digits = 0;
    for (k = 0; k < 6; k++) {
        for (v[k] = 0, c = 0; c < width[k]; c++, i++) {
            if (i >= n || s[i] < '0' || s[i] > '9') return false;
            v[k] = v[k] * 10 + (s[i] - '0');
        }
        if (k < 5) {
            if (i >= n || (s[i] != sep[k] && !(k == 2 && s[i] == 't'))) return false;
            i++;
        }
    }
    if (v[1] < 1 || v[1] > 12 || v[2] < 1 || v[2] > kctl__time_mdays(v[0], (int)v[1]) || v[3] > 23 || v[4] > 59 || v[5] > 59)
        return false;
    if (i < n && s[i] == '.') {
        for (i++; i < n && s[i] >= '0' && s[i] <= '9'; i++, digits++)
            if (digits < 6) frac = frac * 10 + (s[i] - '0');
        if (digits == 0 || digits > 9) return false;
        for (; digits < 6; digits++) frac *= 10;
    }
    if (i < n && (s[i] == 'Z' || s[i] == 'z')) {
        i++;
    } else if (i + 6 == n && (s[i] == '+' || s[i] == '-') && s[i + 3] == ':') {
        const char *o = s + i + 1;
        for (k = 0; k < 5; k++)
            if (k != 2 && (o[k] < '0' || o[k] > '9')) return false;
        if ((o[0] - '0') * 10 + (o[1] - '0') > 23 || (o[3] - '0') * 10 + (o[4] - '0') > 59) return false;
        off = ((o[0] - '0') * 10 + (o[1] - '0')) * 3600 + ((o[3] - '0') * 10 + (o[4] - '0')) * 60;
        if (s[i] == '-') off = -off;
        i += 6;
    } else {
        return false;
    }
    if (i != n) return false;
    us = ((kctl__time_days(v[0], (int)v[1], (int)v[2]) * 86400 + v[3] * 3600 + v[4] * 60 + v[5]) - off) * 1000000 + frac;
    if (us < KCTL__TIME_US_MIN || us > KCTL__TIME_US_MAX) return false;
    *out = us;
    return true;
}


KCTL_API kctl_clock kctl_clock_monotonic(void) {
    kctl_clock c;
    memset(&c, 0, sizeof c);
    c.now_fn = kctl__mono_now;
    return c;
}

KCTL_API uint64_t kctl_clock_now(const kctl_clock *c) {
    if (!c || !c->now_fn) return kctl__mono_now(NULL);
    return c->now_fn(c->user_data);
}

/* a + b, UINT64_MAX when it wraps (the carry: shorter than a compare
   with UINT64_MAX - a on 32-bit processors) */
static KCTL__SMALL_CALL32 uint64_t kctl__add_sat(uint64_t a, uint64_t b) {
    uint64_t s = a + b;
    return s < a ? UINT64_MAX : s;
}
/* d * r, r in [0, 1) the top 32 bits of x over 2^32, rounded down: jitter
   in integer arithmetic (no floating point, for KCTL_NO_FLOAT builds). */
static KCTL__UNUSED uint64_t kctl__mul_frac(uint64_t d, uint64_t x) {
    uint64_t f = x >> 32;
    return (d >> 32) * f + (((d & UINT64_C(0xffffffff)) * f) >> 32);
}

/* The virtual clock keeps two platform mutexes in its opaque storage: one
   for the time (a leaf lock, taken by now() under other objects' locks) and
   one for the waiter list (held while waking waiters, which take their own
   locks: list lock -> waiter's lock, never the other way round). */
typedef struct kctl__vclock_locks {
    kctl__mutex time_mu;
    kctl__mutex list_mu;
} kctl__vclock_locks;
typedef char kctl__vclock_locks_fit[sizeof(kctl__vclock_locks) <= sizeof(((kctl_vclock *)0)->lock_) ? 1 : -1];

static kctl__vclock_locks *kctl__vclock_locks_of(kctl_vclock *vc) { return (kctl__vclock_locks *)(void *)vc->lock_.bytes; }

static uint64_t kctl__vclock_now(void *user_data) {
    kctl_vclock *vc = (kctl_vclock *)user_data;
    kctl__vclock_locks *l = kctl__vclock_locks_of(vc);
    uint64_t t;
    kctl__mutex_lock(&l->time_mu);
    t = vc->now_ns;
    kctl__mutex_unlock(&l->time_mu);
    return t;
}

static void kctl__vclock_subscribe(kctl_clock_waiter *w, void *user_data) {
    kctl_vclock *vc = (kctl_vclock *)user_data;
    kctl__vclock_locks *l = kctl__vclock_locks_of(vc);
    kctl__mutex_lock(&l->list_mu);
    w->prev = NULL;
    w->next = vc->waiters;
    if (vc->waiters) vc->waiters->prev = w;
    vc->waiters = w;
    kctl__mutex_unlock(&l->list_mu);
}

static void kctl__vclock_unsubscribe(kctl_clock_waiter *w, void *user_data) {
    kctl_vclock *vc = (kctl_vclock *)user_data;
    kctl__vclock_locks *l = kctl__vclock_locks_of(vc);
    kctl__mutex_lock(&l->list_mu);
    if (w->prev) w->prev->next = w->next;
    else if (vc->waiters == w) vc->waiters = w->next;
    if (w->next) w->next->prev = w->prev;
    w->next = w->prev = NULL;
    kctl__mutex_unlock(&l->list_mu);
}

KCTL_API void kctl_vclock_init(kctl_vclock *vc, uint64_t start_ns) {
    kctl__vclock_locks *l;
    if (!vc) return;
    memset(vc, 0, sizeof *vc);
    vc->now_ns = start_ns;
    l = kctl__vclock_locks_of(vc);
    /* Default mutexes cannot fail to initialize on the platforms kctl
       targets (glibc, musl, the BSDs never allocate for them). */
    (void)kctl__mutex_init(&l->time_mu);
    (void)kctl__mutex_init(&l->list_mu);
}

KCTL_API void kctl_vclock_deinit(kctl_vclock *vc) {
    kctl__vclock_locks *l;
    if (!vc) return;
    l = kctl__vclock_locks_of(vc);
    kctl__mutex_deinit(&l->time_mu);
    kctl__mutex_deinit(&l->list_mu);
}

KCTL_API kctl_clock kctl_vclock_clock(kctl_vclock *vc) {
    kctl_clock c;
    memset(&c, 0, sizeof c);
    if (!vc) return kctl_clock_monotonic();
    c.now_fn = kctl__vclock_now;
    c.subscribe_fn = kctl__vclock_subscribe;
    c.unsubscribe_fn = kctl__vclock_unsubscribe;
    c.user_data = vc;
    return c;
}

KCTL_API void kctl_vclock_advance(kctl_vclock *vc, uint64_t delta_ns) {
    kctl__vclock_locks *l;
    kctl_clock_waiter *w;
    if (!vc) return;
    l = kctl__vclock_locks_of(vc);
    kctl__mutex_lock(&l->time_mu);
    vc->now_ns = kctl__add_sat(vc->now_ns, delta_ns);
    kctl__mutex_unlock(&l->time_mu);
    kctl__mutex_lock(&l->list_mu);
    for (w = vc->waiters; w; w = w->next) w->wake(w->arg);
    kctl__mutex_unlock(&l->list_mu);
}

/* ------------------------------------------------------------ >>json JSON */
#define KCTL__JSON_DEPTH_CAP 1024     /* the most kctl_json_limits.max_depth can ask for */
#define KCTL__JSON_PATH_NAME_MAX 1024 /* a bracket-quoted path segment, unescaped */
#ifndef KCTL__JSON_SCAN_MAX /* (a test may lower it, to send small objects down the sorting paths) */
#define KCTL__JSON_SCAN_MAX 16        /* objects of up to this many members are scanned; bigger ones sorted */
#endif
#if KCTL__JSON_SCAN_MAX < 1
#error "KCTL__JSON_SCAN_MAX must be at least 1"
#endif

#ifdef KCTL__WORK_COUNTER /* for kctl's tests: bound the work, not the time */
static uint64_t kctl__jwork_n;
KCTL_API uint64_t kctl__json_work(void) {
#ifdef KCTL__HINTS
    return KCTL__LOAD(&kctl__jwork_n);
#else
    return kctl__jwork_n;
#endif
}
#define KCTL__JWORK() ((void)KCTL__ATOMIC_INC(&kctl__jwork_n))
#else
#define KCTL__JWORK() ((void)0)
#endif

enum { KCTL__JP_VALUE, KCTL__JP_KEY };

typedef struct kctl__jparse {
    const char *s;
    uint32_t pos, len;
    kctl_json_tok *toks;
    uint32_t cap, n;
} kctl__jparse;

/* Claim the next token (it is only stored while there is room). */
static KCTL__SMALL_CALL uint32_t kctl__jtok(kctl__jparse *p, kctl_json_type type, uint32_t start) {
    uint32_t i = p->n++;
    if (i < p->cap) {
        kctl_json_tok *t = &p->toks[i];
        memset(t, 0, sizeof *t);
        t->type = (uint8_t)type;
        t->start = start;
        t->skip = 1;
    }
    return i;
}

static void kctl__jend(kctl__jparse *p, uint32_t i, uint32_t end) {
    if (i < p->cap) {
        p->toks[i].end = end;
        p->toks[i].skip = p->n - i;
    }
}

static KCTL__SMALL_CALL bool kctl__jspace(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; }

static void kctl__jws(kctl__jparse *p) {
#if KCTL_SMALL
    while (p->pos < p->len && kctl__jspace(p->s[p->pos])) p->pos++;
#else
    while (p->pos < p->len) {
        char c = p->s[p->pos];
        if (c != ' ' && c != '\t' && c != '\n' && c != '\r') break;
        p->pos++;
    }
#endif
}

/* Past whitespace, then past c if it comes next: whether it did. */
static bool kctl__jeat(kctl__jparse *p, char c) {
    kctl__jws(p);
    if (p->pos >= p->len || p->s[p->pos] != c) return false;
    p->pos++;
    return true;
}

static int kctl__jhex(char c) {
#if KCTL_SMALL
    unsigned d = (unsigned)(unsigned char)c - '0', l = ((unsigned)(unsigned char)c | 0x20) - 'a'; /* (| 0x20: A-F as a-f) */
    return d < 10 ? (int)d : l < 6 ? (int)l + 10 : -1;
#else /* (the reader's string scan, into which this is inlined, is faster so) */
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
#endif
}

/* Four hex digits at s[0..3], or -1. */
static long kctl__jhex4(const char *s) {
    long v = 0;
    int i, d;
    for (i = 0; i < 4; i++) {
        if ((d = kctl__jhex(s[i])) < 0) return -1;
        v = v * 16 + d;
    }
    return v;
}

/* Length of the well-formed UTF-8 sequence at s[0..n) (n >= 1, s[0] >= 0x80),
   or 0: no overlongs, no surrogates, nothing above U+10FFFF. */
static uint32_t kctl__utf8_len(const unsigned char *s, uint32_t n) {
    unsigned char c = s[0], lo = 0x80, hi = 0xBF; /* the second byte's range: the first's narrows it */
    uint32_t k = c < 0xC2 ? 0 : c < 0xE0 ? 2 : c < 0xF0 ? 3 : c < 0xF5 ? 4 : 0, i;
    if (c == 0xE0) lo = 0xA0;
    if (c == 0xF0) lo = 0x90;
    if (c == 0xED) hi = 0x9F;
    if (c == 0xF4) hi = 0x8F;
    if (n < k) return 0;
    for (i = 1; i < k; i++, lo = 0x80, hi = 0xBF)
        if (s[i] < lo || s[i] > hi) return 0;
    return k;
}

/* The letters of JSON's two-character escapes, then what each stands for
   (\/ is read, never written). */
static const char kctl__jesc[] = "\"\\bfnrt/\"\\\b\f\n\r\t/";

/* One unit of a JSON string's contents at *p (before end): its UTF-8 bytes
   into out[0..4), their count returned, *p moved past it; 0 if the text
   is not JSON there. Escaped: 0, the bytes as they are; 1, JSON text
   (backslash escapes, no control characters, a well-formed UTF-8
   sequence one unit: what the parser checks); 2, a quoted name of a path,
   where \" and \\ stand for " and \. */
static uint32_t kctl__jnext(const char **p, const char *end, int escaped, char out[4]) {
    const char *s = *p, *q;
    size_t n = (size_t)(end - s);
    unsigned char c = (unsigned char)*s;
    long u, lo;
    uint32_t k = 1, i;
    if (!escaped || c != '\\') {
        if (escaped == 1 && (c < 0x20 || (c >= 0x80 && !(k = kctl__utf8_len((const unsigned char *)s, (uint32_t)n))))) return 0;
        for (i = 0; i < k; i++) out[i] = s[i];
        *p = s + k;
        return k;
    }
    c = n > 1 ? (unsigned char)s[1] : 0;
    if (escaped == 2) { /* any other backslash is itself */
        k = c == '"' || c == '\\';
        out[0] = s[k];
        *p = s + 1 + k;
        return 1;
    }
    if (c != 'u') { /* \b \f \n \r \t, or " \ / as they are */
        if (!c || !(q = kctl__strchr(kctl__jesc, c)) || q >= kctl__jesc + 8) return 0;
        out[0] = q[8];
        *p = s + 2;
        return 1;
    }
    if (n < 6 || (u = kctl__jhex4(s + 2)) < 0 || (u >= 0xDC00 && u <= 0xDFFF)) return 0; /* (a lone low surrogate) */
    *p = s + 6;
    if (u >= 0xD800 && u <= 0xDBFF) { /* a high surrogate, and its low one */
        if (n < 12 || s[6] != '\\' || s[7] != 'u' || (lo = kctl__jhex4(s + 8)) < 0xDC00 || lo > 0xDFFF) return 0;
        u = 0x10000 + ((u - 0xD800) << 10) + (lo - 0xDC00);
        *p = s + 12;
    }
    if (u < 0x80) {
        out[0] = (char)u;
        return 1;
    }
    k = u < 0x800 ? 2 : u < 0x10000 ? 3 : 4; /* continuation bytes of 6 bits, after a lead of 0xC0, 0xE0, 0xF0 */
    for (i = k; --i > 0; u >>= 6) out[i] = (char)(0x80 | (u & 0x3F));
    out[0] = (char)((0xF00 >> k) | u);
    return k;
}

/* The bytes of x (8 of a string's) that a JSON string cannot hold as they
   stand, or that need a closer look: the high bit set of each byte under
   0x20, 0x22 ("), 0x5c (\\) or from 0x80. None is missed; a byte above a
   flagged one may be flagged too (a borrow runs upwards), the lowest
   flagged byte never wrongly. */
static uint64_t kctl__jspecial8(uint64_t x) {
    const uint64_t ones = UINT64_C(0x0101010101010101);
    return (x | (x - ones * 0x20) | ((x ^ (ones * 0x22)) - ones) | ((x ^ (ones * 0x5c)) - ones)) & (ones * 0x80);
}

#if KCTL_SMALL /* the unescaper's checks, a unit at a time */
static int kctl__jstring(kctl__jparse *p, bool *escaped) {
    const char *s = p->s + p->pos + 1, *e = p->s + p->len; /* after the opening quote */
    char u[4];
    *escaped = false;
    for (;;) {
        if (s >= e) return KCTL_ERR_PROTO;
        if (*s == '"') break;
        if (*s == '\\') *escaped = true;
        if (!kctl__jnext(&s, e, 1, u)) return KCTL_ERR_PROTO;
    }
    p->pos = (uint32_t)(s - p->s); /* at the closing quote */
    return KCTL_OK;
}
#else
#if (defined(__GNUC__) || defined(__clang__)) && defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
#define KCTL__JSKIP 1 /* a string's plain bytes skipped 8 at a time: to the first special one */
#else
#define KCTL__JSKIP 0
#endif
static int kctl__jstring(kctl__jparse *p, bool *escaped) {
    const unsigned char *s = (const unsigned char *)p->s;
    uint32_t i = p->pos + 1; /* after the opening quote */
    *escaped = false;
    for (;;) {
        unsigned char c;
#if KCTL__JSKIP
        if (p->len - i >= 8) { /* (i never passes len) */
            uint64_t x, m;
            kctl__memcpy(&x, s + i, 8);
            if (!(m = kctl__jspecial8(x))) {
                i += 8;
                continue;
            }
            i += (uint32_t)__builtin_ctzll(m) >> 3; /* the first byte below to look at */
        }
#endif
        if (i >= p->len) return KCTL_ERR_PROTO;
        c = s[i];
        if (c == '"') break;
        if (c < 0x20) return KCTL_ERR_PROTO;
        if (c == '\\') {
            long u;
            *escaped = true;
            if (i + 1 >= p->len) return KCTL_ERR_PROTO;
            c = s[i + 1];
            if (c != 'u') {
                if (!kctl__strchr("\"\\/bfnrt", c) || c == 0) return KCTL_ERR_PROTO;
                i += 2;
                continue;
            }
            if (p->len - i < 6 || (u = kctl__jhex4(p->s + i + 2)) < 0) return KCTL_ERR_PROTO;
            i += 6;
            if (u >= 0xDC00 && u <= 0xDFFF) return KCTL_ERR_PROTO; /* a lone low surrogate */
            if (u >= 0xD800 && u <= 0xDBFF) { /* a high one needs its low one */
                long lo;
                if (p->len - i < 6 || s[i] != '\\' || s[i + 1] != 'u') return KCTL_ERR_PROTO;
                lo = kctl__jhex4(p->s + i + 2);
                if (lo < 0xDC00 || lo > 0xDFFF) return KCTL_ERR_PROTO;
                i += 6;
            }
            continue;
        }
        if (c < 0x80) {
            i++;
        } else {
            uint32_t k = kctl__utf8_len(s + i, p->len - i);
            if (!k) return KCTL_ERR_PROTO;
            i += k;
        }
    }
    p->pos = i; /* at the closing quote */
    return KCTL_OK;
}
#endif

static KCTL__SMALL_CALL32 bool kctl__jdigit(char c) { return c >= '0' && c <= '9'; }

/* The index past the digits at s[i..n). */
static KCTL__SMALL_CALL uint32_t kctl__jdigits(const char *s, uint32_t i, uint32_t n) {
    while (i < n && kctl__jdigit(s[i])) i++;
    return i;
}

static int kctl__jnumber(kctl__jparse *p) {
    uint32_t i = p->pos, k;
    const char *s = p->s;
    if (i < p->len && s[i] == '-') i++;
    if ((k = kctl__jdigits(s, i, p->len)) == i) return KCTL_ERR_PROTO;
    i = s[i] == '0' ? i + 1 : k; /* no leading zeros: 0 ends the integer part */
    if (i < p->len && s[i] == '.') {
        i++;
        if ((k = kctl__jdigits(s, i, p->len)) == i) return KCTL_ERR_PROTO;
        i = k;
    }
    if (i < p->len && (s[i] == 'e' || s[i] == 'E')) {
        i++;
        if (i < p->len && (s[i] == '+' || s[i] == '-')) i++;
        if ((k = kctl__jdigits(s, i, p->len)) == i) return KCTL_ERR_PROTO;
        i = k;
    }
    p->pos = i;
    return KCTL_OK;
}

/* The length of the word true, false or null that s[0..n) starts with
   (s[0] is t, f or n), or 0. */
static uint32_t kctl__jword(const char *s, uint32_t n) {
    const char *word = *s == 't' ? "true" : *s == 'f' ? "false" : "null";
    uint32_t k;
    for (k = 0; word[k]; k++)
        if (k >= n || s[k] != word[k]) return 0;
    return k;
}

/* The type of the value that starts with c. */
static kctl_json_type kctl__jtype_at(char c) {
#if KCTL_SMALL
    static const char first[] = "{[\"-tfn"; /* in kctl_json_type's order from OBJECT ('-' starts a NUMBER, as a digit does) */
    const char *q = c ? kctl__strchr(first, c) : NULL;
    if (q) return (kctl_json_type)(KCTL_JSON_OBJECT + (q - first));
    return kctl__jdigit(c) ? KCTL_JSON_NUMBER : KCTL_JSON_INVALID;
#else
    switch (c) { /* (once per value: a switch, not a call of strchr) */
    case '{': return KCTL_JSON_OBJECT;
    case '[': return KCTL_JSON_ARRAY;
    case '"': return KCTL_JSON_STRING;
    case 't': return KCTL_JSON_TRUE;
    case 'f': return KCTL_JSON_FALSE;
    case 'n': return KCTL_JSON_NULL;
    default: return c == '-' || kctl__jdigit(c) ? KCTL_JSON_NUMBER : KCTL_JSON_INVALID;
    }
#endif
}

/* The parse proper, of the text that p is set up for, containers nested
   at most max_depth deep: OK or the error. */
static int kctl__jparse_all(kctl__jparse *p, uint32_t max_depth) {
    uint32_t stack[KCTL__JSON_DEPTH_CAP]; /* open containers' tokens */
    bool is_obj[KCTL__JSON_DEPTH_CAP];
    uint32_t depth = 0;
    int want = KCTL__JP_VALUE, rc;
    for (;;) {
        kctl_json_type type;
        uint32_t t, n;
        kctl__jws(p);
        if (p->pos >= p->len) return KCTL_ERR_PROTO;
        type = kctl__jtype_at(p->s[p->pos]);
        if (want == KCTL__JP_KEY && type != KCTL_JSON_STRING) return KCTL_ERR_PROTO;
        t = kctl__jtok(p, type, p->pos + (type == KCTL_JSON_STRING)); /* (a string's: inside its quotes) */
        if (type == KCTL_JSON_STRING) {
            bool esc;
            if ((rc = kctl__jstring(p, &esc)) != KCTL_OK) return rc;
            if (t < p->cap) p->toks[t].escaped = esc;
            kctl__jend(p, t, p->pos++); /* at the closing quote, then past it */
            if (want == KCTL__JP_KEY) { /* a member's name: its value follows */
                if (!kctl__jeat(p, ':')) return KCTL_ERR_PROTO;
                want = KCTL__JP_VALUE;
                continue;
            }
        } else {
            if (type == KCTL_JSON_OBJECT || type == KCTL_JSON_ARRAY) {
                bool obj = type == KCTL_JSON_OBJECT;
                if (depth >= max_depth) return KCTL_ERR_TOO_LARGE;
                stack[depth] = t;
                is_obj[depth++] = obj;
                p->pos++;
                if (!kctl__jeat(p, obj ? '}' : ']')) {
                    want = obj ? KCTL__JP_KEY : KCTL__JP_VALUE;
                    continue;
                }
                depth--; /* empty */
            } else if (type >= KCTL_JSON_TRUE) {
#if KCTL_SMALL /* the skipper's check */
                if (!(n = kctl__jword(p->s + p->pos, p->len - p->pos))) return KCTL_ERR_PROTO;
#else
                const char *word = type == KCTL_JSON_TRUE ? "true" : type == KCTL_JSON_FALSE ? "false" : "null";
                n = (uint32_t)kctl__strlen(word);
                if (p->len - p->pos < n || kctl__memcmp(p->s + p->pos, word, n) != 0) return KCTL_ERR_PROTO;
#endif
                p->pos += n;
            } else if ((rc = kctl__jnumber(p)) != KCTL_OK) { /* (or no value: not one either) */
                return rc;
            }
            kctl__jend(p, t, p->pos);
        }
        /* A value is complete: count it in its container, then close every
           container that ends here. */
        for (;;) {
            uint32_t parent;
            if (depth == 0) { /* the document's value: nothing may follow it */
                kctl__jws(p);
                return p->pos == p->len ? KCTL_OK : KCTL_ERR_PROTO;
            }
            parent = stack[depth - 1];
            if (parent < p->cap) p->toks[parent].size++;
            if (kctl__jeat(p, ',')) {
                want = is_obj[depth - 1] ? KCTL__JP_KEY : KCTL__JP_VALUE;
                break;
            }
            if (!kctl__jeat(p, is_obj[depth - 1] ? '}' : ']')) return KCTL_ERR_PROTO;
            kctl__jend(p, parent, p->pos);
            depth--;
        }
    }
}

KCTL_API int kctl_json_parse(const char *text, size_t len, kctl_json_tok *toks, uint32_t cap,
                             const kctl_json_limits *limits, kctl_json *out) {
    kctl__jparse p;
    uint32_t max_depth = KCTL_JSON_MAX_DEPTH, max_bytes = KCTL_JSON_MAX_BYTES;
    int rc;
    if (!out) return KCTL_ERR_INVALID_ARG;
    memset(out, 0, sizeof *out);
    if (!text) return KCTL_ERR_INVALID_ARG;
    if (len == KCTL_NTS) len = kctl__strlen(text);
    if (limits && limits->max_depth) max_depth = limits->max_depth < KCTL__JSON_DEPTH_CAP ? limits->max_depth : KCTL__JSON_DEPTH_CAP;
    if (limits && limits->max_bytes) max_bytes = limits->max_bytes;
    if (len > max_bytes || len >= UINT32_MAX) return KCTL_ERR_TOO_LARGE;
    memset(&p, 0, sizeof p);
    p.s = text;
    p.len = (uint32_t)len;
    p.toks = toks;
    p.cap = toks ? cap : 0;
    if ((rc = kctl__jparse_all(&p, max_depth)) != KCTL_OK) return rc;
    out->text = text;
    out->len = len;
    out->ntoks = p.n;
    if (toks && p.n > cap) return KCTL_ERR_FULL; /* out->toks stays NULL: nothing to look up */
    out->toks = toks;
    return KCTL_OK;
}

static const kctl_json_tok *kctl__jget(const kctl_json *j, uint32_t v) {
    if (!j || !j->toks || v >= j->ntoks) return NULL;
    return &j->toks[v];
}

KCTL_API kctl_json_type kctl_json_type_of(const kctl_json *j, uint32_t v) {
    const kctl_json_tok *t = kctl__jget(j, v);
    return t ? (kctl_json_type)t->type : KCTL_JSON_INVALID;
}

/* The bytes of a string's contents, unescaped, one at a time. */
typedef struct kctl__jstream {
    const char *p, *e;
    int escaped; /* as kctl__jnext takes it */
    char buf[4];
    uint32_t n, i;
} kctl__jstream;

static int kctl__jstream_byte(kctl__jstream *st) {
    if (st->i == st->n) {
        if (st->p >= st->e) return -1;
        st->n = kctl__jnext(&st->p, st->e, st->escaped, st->buf);
        st->i = 0;
    }
    return (unsigned char)st->buf[st->i++];
}

static int kctl__jstr_cmp(const char *a, const char *ae, int aesc, const char *b, const char *be, int besc);

/* Whether two strings are equal once unescaped (aesc, besc: as kctl__jnext
   takes them). Small builds ask kctl__jstr_cmp. */
#if KCTL_SMALL
#define kctl__jstr_eq(a, ae, aesc, b, be, besc) (kctl__jstr_cmp(a, ae, aesc, b, be, besc) == 0)
#else
static bool kctl__jstr_eq(const char *a, const char *ae, int aesc, const char *b, const char *be, int besc) {
    kctl__jstream x, y;
    int c;
    KCTL__JWORK();
    if (!aesc && !besc) return ae - a == be - b && kctl__memcmp(a, b, (size_t)(ae - a)) == 0;
    memset(&x, 0, sizeof x);
    memset(&y, 0, sizeof y);
    x.p = a; x.e = ae; x.escaped = aesc;
    y.p = b; y.e = be; y.escaped = besc;
    do {
        c = kctl__jstream_byte(&x);
        if (c != kctl__jstream_byte(&y)) return false;
    } while (c >= 0);
    return true;
}
#endif

/* How two strings compare once unescaped: bytewise (unsigned), a prefix
   first. */
static int kctl__jstr_cmp(const char *a, const char *ae, int aesc, const char *b, const char *be, int besc) {
    kctl__jstream x, y;
    KCTL__JWORK();
#if !KCTL_SMALL /* (small builds stream unescaped strings too) */
    if (!aesc && !besc) {
        size_t na = (size_t)(ae - a), nb = (size_t)(be - b);
        int r = kctl__memcmp(a, b, na < nb ? na : nb);
        return r ? r : (na > nb) - (na < nb);
    }
#endif
    memset(&x, 0, sizeof x);
    memset(&y, 0, sizeof y);
    x.p = a; x.e = ae; x.escaped = aesc;
    y.p = b; y.e = be; y.escaped = besc;
    for (;;) {
        int c = kctl__jstream_byte(&x), d = kctl__jstream_byte(&y);
        if (c != d) return c < d ? -1 : 1; /* the end (-1) sorts first */
        if (c < 0) return 0;
    }
}

/* String tokens x of a and y of b: compared, and equal, once unescaped. */
static KCTL__SMALL_CALL int kctl__jtok_cmp(const kctl_json *a, const kctl_json_tok *x, const kctl_json *b, const kctl_json_tok *y) {
    return kctl__jstr_cmp(a->text + x->start, a->text + x->end, x->escaped != 0, b->text + y->start, b->text + y->end,
                          y->escaped != 0);
}
#if KCTL_SMALL
#define kctl__jtok_eq(a, x, b, y) (kctl__jtok_cmp(a, x, b, y) == 0)
#else
static bool kctl__jtok_eq(const kctl_json *a, const kctl_json_tok *x, const kctl_json *b, const kctl_json_tok *y) {
    return kctl__jstr_eq(a->text + x->start, a->text + x->end, x->escaped != 0, b->text + y->start, b->text + y->end,
                         y->escaped != 0);
}
#endif

static KCTL__SMALL_CALL32 bool kctl__jkey_eq(const kctl_json *j, const kctl_json_tok *k, const char *name, size_t n) {
    return kctl__jstr_eq(j->text + k->start, j->text + k->end, k->escaped != 0, name, name + n, false);
}

#if KCTL_SMALL
/* Small builds: one lookup for the three below, the last member of obj
   whose name is s[0..e) (esc: as kctl__jnext takes it); KCTL_JSON_NONE.
   O(members). */
static uint32_t kctl__jmember_str(const kctl_json *j, uint32_t obj, const char *s, const char *e, int esc) {
    const kctl_json_tok *t = kctl__jget(j, obj);
    uint32_t i, m, found = KCTL_JSON_NONE;
    if (!t || t->type != KCTL_JSON_OBJECT) return KCTL_JSON_NONE;
    for (i = obj + 1, m = 0; m < t->size; m++) {
        const kctl_json_tok *k = &j->toks[i];
        if (kctl__jstr_eq(j->text + k->start, j->text + k->end, k->escaped != 0, s, e, esc)) found = i + 1;
        i += 1 + j->toks[i + 1].skip;
    }
    return found;
}
static KCTL__SMALL_CALL uint32_t kctl__jmember_tok(const kctl_json *j, uint32_t obj, const kctl_json *kj, const kctl_json_tok *k) {
    return kctl__jmember_str(j, obj, kj->text + k->start, kj->text + k->end, k->escaped != 0);
}
static uint32_t kctl__jmember_n(const kctl_json *j, uint32_t obj, const char *name, size_t n) {
    return kctl__jmember_str(j, obj, name, name + n, 0);
}
/* (the last of its name: the member found for it is itself) */
static bool kctl__jlast(const kctl_json *j, uint32_t obj, uint32_t ki) { return kctl__jmember_tok(j, obj, j, &j->toks[ki]) == ki + 1; }
#else
/* The last member of obj named like token k of document kj; KCTL_JSON_NONE.
   O(members). */
static uint32_t kctl__jmember_tok(const kctl_json *j, uint32_t obj, const kctl_json *kj, const kctl_json_tok *k) {
    const kctl_json_tok *t = kctl__jget(j, obj);
    uint32_t i, m, found = KCTL_JSON_NONE;
    if (!t || t->type != KCTL_JSON_OBJECT) return KCTL_JSON_NONE;
    for (i = obj + 1, m = 0; m < t->size; m++) {
        if (kctl__jtok_eq(j, &j->toks[i], kj, k)) found = i + 1;
        i += 1 + j->toks[i + 1].skip;
    }
    return found;
}

static uint32_t kctl__jmember_n(const kctl_json *j, uint32_t obj, const char *name, size_t n) {
    const kctl_json_tok *t = kctl__jget(j, obj);
    uint32_t i, m, found = KCTL_JSON_NONE;
    if (!t || t->type != KCTL_JSON_OBJECT) return KCTL_JSON_NONE;
    for (i = obj + 1, m = 0; m < t->size; m++) {
        const kctl_json_tok *k = &j->toks[i];
        if ((k->escaped || k->end - k->start == n) && kctl__jkey_eq(j, k, name, n)) found = i + 1; /* unescaped: the length decides most */
        i += 1 + j->toks[i + 1].skip;
    }
    return found;
}

/* Whether member name token ki of object obj is the last of its name there
   (no later member has it). O(members after it): for a few members; a loop
   over many takes kctl__jmembers. */
static bool kctl__jlast(const kctl_json *j, uint32_t obj, uint32_t ki) {
    uint32_t end = obj + j->toks[obj].skip, i;
    for (i = ki + 1 + j->toks[ki + 1].skip; i < end; i += 1 + j->toks[i + 1].skip)
        if (kctl__jtok_eq(j, &j->toks[i], j, &j->toks[ki])) return false;
    return true;
}

#endif

/* Sort v[0..n) by cmp (a total order: ties broken), with tmp[0..n) for
   scratch: insertion sort of runs of 8, then bottom-up merges; a merge of
   two runs already in order costs one comparison. O(n log n) comparisons
   on any input, O(n) on sorted input (small builds: merges alone, n log n
   on sorted input too). Indices are size_t, the width of the machine: v
   and tmp are in memory, so 8 n bytes fit in its address space and
   i + 2 w < 3 n cannot wrap (no 64-bit arithmetic on a 32-bit MCU). */
typedef int (*kctl__cmp_fn)(const void *ctx, uint32_t a, uint32_t b);
static void kctl__sort_u32(uint32_t *v, uint32_t *tmp, uint32_t n, kctl__cmp_fn cmp, const void *ctx) {
    uint32_t *src = v, *dst = tmp, *t;
    size_t w, i, k;
#if KCTL_SMALL /* the merges alone, from runs of one: the same order (n log n comparisons, sorted or not) */
    for (w = 1; w < n; w *= 2) {
        for (i = 0; i < n; i += 2 * w) {
            size_t mid = i + w < n ? i + w : n, hi = i + 2 * w < n ? i + 2 * w : n, p = i, q = mid;
            for (k = i; k < hi; k++) dst[k] = q == hi || (p < mid && cmp(ctx, src[q], src[p]) >= 0) ? src[p++] : src[q++];
        }
        t = src; src = dst; dst = t;
    }
#else
    for (i = 0; i < n; i += 8) {
        size_t e = i + 8 < n ? i + 8 : n;
        for (k = i + 1; k < e; k++) {
            uint32_t x = v[k];
            size_t m = k;
            while (m > i && cmp(ctx, v[m - 1], x) > 0) { v[m] = v[m - 1]; m--; }
            v[m] = x;
        }
    }
    for (w = 8; w < n; w *= 2) {
        for (i = 0; i < n; i += 2 * w) {
            size_t mid = i + w < n ? i + w : n, hi = i + 2 * w < n ? i + 2 * w : n, p = i, q = mid, o = i;
            if (mid < hi && cmp(ctx, src[mid - 1], src[mid]) > 0) {
                while (p < mid && q < hi) dst[o++] = cmp(ctx, src[q], src[p]) < 0 ? src[q++] : src[p++];
            }
            kctl__memcpy(dst + o, src + p, (size_t)(mid - p) * sizeof *src); /* what is left of either run */
            o += mid - p;
            kctl__memcpy(dst + o, src + q, (size_t)(hi - q) * sizeof *src);
        }
        t = src; src = dst; dst = t;
    }
#endif
    if (src != v) kctl__memcpy(v, src, (size_t)n * sizeof *v);
}

/* kctl__jmembers: the members of an object that count. RFC 8259 lets a
   name repeat in an object; kctl counts the last, as Go's encoding/json
   does. This lists the name tokens of the members that count (each value
   is at its name's token + 1), each name once:
       v->keys[0 .. v->n)     in document order;
       v->byname[0 .. v->n)   (only if byname; else NULL) positions in keys,
                              in the order of the unescaped names (bytewise,
                              a prefix first), to match two objects' members
                              in one walk or find a name by binary search.
   Cost: O(m log m) name comparisons for an object of m members whatever
   the input (O(m) when its names come sorted, as Kubernetes writes maps;
   small builds sort those in m log m too).
   Memory: none for up to KCTL__JSON_SCAN_MAX members (v's own array, and
   a scan); past that one block of 12 bytes a member from a (NULL: the
   default allocator), held until kctl__jmembers_free. Returns OK, NOMEM
   (v is then empty), INVALID_ARG (obj is no object of j). Always call
   kctl__jmembers_free(v) after, also after an error. v belongs to the
   caller (do not copy it: keys may point into it) and views j's tokens:
   j must outlive it. [any thread] */
typedef struct kctl__jmview {
    const uint32_t *keys;
    const uint32_t *byname;
    uint32_t n;
    uint32_t *mem_;
    kctl_allocator al_;
    uint32_t small_[3 * KCTL__JSON_SCAN_MAX];
} kctl__jmview;

typedef struct kctl__jmsort {
    const kctl_json *j;
    const uint32_t *idx; /* member i's name token */
} kctl__jmsort;

/* Members a and b: by name, then by position. */
static int kctl__jmcmp(const void *ctx, uint32_t a, uint32_t b) {
    const kctl__jmsort *c = (const kctl__jmsort *)ctx;
    int r = kctl__jtok_cmp(c->j, &c->j->toks[c->idx[a]], c->j, &c->j->toks[c->idx[b]]);
    return r ? r : (a > b) - (a < b);
}

static void kctl__jmembers_free(kctl__jmview *v) {
    if (!v) return;
    kctl__free(&v->al_, v->mem_);
    v->mem_ = NULL;
    v->keys = v->byname = NULL;
    v->n = 0;
}

static int kctl__jmembers(const kctl_json *j, uint32_t obj, const kctl_allocator *a, bool byname, kctl__jmview *v) {
    const kctl_json_tok *t = kctl__jget(j, obj);
    uint32_t m, i, k, n = 0, *idx, *ord, *tmp;
    uint64_t bytes;
    kctl__jmsort ctx;
    v->keys = v->small_;
    v->byname = NULL;
    v->n = 0;
    v->mem_ = NULL;
    memset(&v->al_, 0, sizeof v->al_);
    if (a) v->al_ = *a;
    if (!t || t->type != KCTL_JSON_OBJECT) return KCTL_ERR_INVALID_ARG;
    m = t->size;
#if !KCTL_SMALL /* (small builds sort a few in v's own array too: the same lists) */
    if (m <= KCTL__JSON_SCAN_MAX) { /* a few: scan, sort by insertion */
        uint32_t *order = v->small_ + KCTL__JSON_SCAN_MAX;
        for (i = obj + 1, k = 0; k < m; k++, i += 1 + j->toks[i + 1].skip)
            if (kctl__jlast(j, obj, i)) v->small_[n++] = i;
        if (byname) {
            for (k = 0; k < n; k++) {
                uint32_t p = k;
                while (p > 0 && kctl__jtok_cmp(j, &j->toks[v->small_[order[p - 1]]], j, &j->toks[v->small_[k]]) > 0) {
                    order[p] = order[p - 1];
                    p--;
                }
                order[p] = k;
            }
            v->byname = order;
        }
        v->n = n;
        return KCTL_OK;
    }
#endif
    bytes = (uint64_t)m * 3 * sizeof *idx;
    if (m <= KCTL__JSON_SCAN_MAX) idx = v->small_;
    else if (bytes != (size_t)bytes || !(idx = (uint32_t *)kctl__alloc(&v->al_, (size_t)bytes))) return KCTL_ERR_NOMEM;
    else v->mem_ = idx;
    ord = idx + m;
    tmp = ord + m;
    for (i = obj + 1, k = 0; k < m; k++, i += 1 + j->toks[i + 1].skip) {
        idx[k] = i;
        ord[k] = k;
    }
    ctx.j = j;
    ctx.idx = idx;
    kctl__sort_u32(ord, tmp, m, kctl__jmcmp, &ctx);
    for (k = 0; k + 1 < m; k++) /* of a run of one name, the last (in document order) counts */
        if (kctl__jtok_cmp(j, &j->toks[idx[ord[k]]], j, &j->toks[idx[ord[k + 1]]]) == 0) idx[ord[k]] = KCTL_JSON_NONE;
    for (k = 0; k < m; k++) { /* keep those in document order; tmp: member -> its position in keys */
        tmp[k] = idx[k] == KCTL_JSON_NONE ? KCTL_JSON_NONE : n;
        if (idx[k] != KCTL_JSON_NONE) idx[n++] = idx[k];
    }
    if (byname) {
        uint32_t c = 0;
        for (k = 0; k < m; k++)
            if (tmp[ord[k]] != KCTL_JSON_NONE) ord[c++] = tmp[ord[k]];
        v->byname = ord;
    }
    v->keys = idx;
    v->n = n;
    return KCTL_OK;
}

KCTL_API uint32_t kctl_json_member(const kctl_json *j, uint32_t obj, const char *name) {
    if (!name) return KCTL_JSON_NONE;
    return kctl__jmember_n(j, obj, name, kctl__strlen(name));
}

KCTL_API uint32_t kctl_json_element(const kctl_json *j, uint32_t arr, uint32_t idx) {
    const kctl_json_tok *t = kctl__jget(j, arr);
    uint32_t i, m;
    if (!t || t->type != KCTL_JSON_ARRAY || idx >= t->size) return KCTL_JSON_NONE;
    for (i = arr + 1, m = 0; m < idx; m++) i += j->toks[i].skip;
    return i;
}

/* One step of a path: a member's name, as written in the path (name[0..n);
   quoted: between brackets and quotes, with \" and \\ for " and \), or,
   name NULL, an element's index. */
typedef struct kctl__jseg {
    const char *name;
    size_t n;
    bool quoted;
    uint32_t index;
} kctl__jseg;

/* The step of the path at *ps: 1, with *ps past it and past a dot after
   it; 0 at the end; -1 if the path is malformed there (a quoted name of
   more than KCTL__JSON_PATH_NAME_MAX bytes included). */
static int kctl__jpath_next(const char **ps, kctl__jseg *g) {
    const char *s = *ps;
    if (!*s) return 0;
    g->quoted = false;
    if (*s == '[') {
        s++;
        if (*s == '"') { /* ["name"], with \" and \\ inside */
            size_t n = 0;
            g->name = ++s;
            for (; *s && *s != '"'; s++, n++) {
                if (*s == '\\' && (s[1] == '"' || s[1] == '\\')) s++;
                if (n == KCTL__JSON_PATH_NAME_MAX) return -1;
            }
            if (*s != '"' || s[1] != ']') return -1;
            g->n = (size_t)(s - g->name);
            g->quoted = true;
            s += 2;
        } else { /* [index] */
            uint32_t idx = 0, d;
            if (!kctl__jdigit(*s)) return -1;
            for (; kctl__jdigit(*s); s++) {
                d = (uint32_t)(*s - '0');
                if (idx > (UINT32_MAX - d) / 10) return -1; /* past UINT32_MAX */
                idx = idx * 10 + d;
            }
            if (*s != ']') return -1;
            s++;
            g->name = NULL;
            g->index = idx;
        }
    } else {
        const char *e = s;
        while (*e && *e != '.' && *e != '[') e++;
        if (e == s) return -1; /* an empty name */
        g->name = s;
        g->n = (size_t)(e - s);
        s = e;
    }
    if (*s == '.') {
        s++;
        if (!*s || *s == '.' || *s == '[') return -1;
    } else if (*s && *s != '[') {
        return -1;
    }
    *ps = s;
    return 1;
}

/* Whether the string a[0..ae) (escaped: it has JSON escapes, validated)
   is the name that step g names. */
static bool kctl__jseg_eq(const char *a, const char *ae, bool aesc, const kctl__jseg *g) {
#if KCTL_SMALL
    return kctl__jstr_cmp(a, ae, aesc, g->name, g->name + g->n, g->quoted ? 2 : 0) == 0;
#else
    kctl__jstream x;
    const char *q = g->name, *qe = g->name + g->n;
    if (!g->quoted) return kctl__jstr_eq(a, ae, aesc, q, qe, false);
    KCTL__JWORK();
    memset(&x, 0, sizeof x);
    x.p = a;
    x.e = ae;
    x.escaped = aesc;
    for (; q < qe; q++) {
        if (*q == '\\' && q + 1 < qe && (q[1] == '"' || q[1] == '\\')) q++;
        if (kctl__jstream_byte(&x) != (unsigned char)*q) return false;
    }
    return kctl__jstream_byte(&x) < 0;
#endif
}

/* The last member of obj that step g names; KCTL_JSON_NONE. */
static uint32_t kctl__jmember_seg(const kctl_json *j, uint32_t obj, const kctl__jseg *g) {
    const kctl_json_tok *t = kctl__jget(j, obj);
    uint32_t i, m, found = KCTL_JSON_NONE;
    if (!t || t->type != KCTL_JSON_OBJECT) return KCTL_JSON_NONE;
    for (i = obj + 1, m = 0; m < t->size; m++) {
        const kctl_json_tok *k = &j->toks[i];
        if (kctl__jseg_eq(j->text + k->start, j->text + k->end, k->escaped != 0, g)) found = i + 1;
        i += 1 + j->toks[i + 1].skip;
    }
    return found;
}

KCTL_API uint32_t kctl_json_path(const kctl_json *j, uint32_t from, const char *path) {
    uint32_t v = from;
    const char *s = path;
    kctl__jseg g;
    int r;
    if (!kctl__jget(j, from) || !path) return KCTL_JSON_NONE;
    while ((r = kctl__jpath_next(&s, &g)) > 0) {
        v = g.name ? kctl__jmember_seg(j, v, &g) : kctl_json_element(j, v, g.index);
        if (v == KCTL_JSON_NONE) return KCTL_JSON_NONE;
    }
    return r < 0 ? KCTL_JSON_NONE : v;
}

KCTL_API int kctl_json_string(const kctl_json *j, uint32_t v, char *buf, size_t cap, size_t *len) {
    const kctl_json_tok *t = kctl__jget(j, v);
    const char *s, *e;
    size_t n = 0;
    char u[4];
    if (len) *len = 0;
    if (!t || t->type != KCTL_JSON_STRING || (!buf && cap)) return KCTL_ERR_INVALID_ARG;
    s = j->text + t->start;
    e = j->text + t->end;
#if !KCTL_SMALL /* (small builds copy it a byte at a time below) */
    if (!t->escaped) { /* as it stands (checked when parsed) */
        n = (size_t)(e - s);
        if (n < cap) kctl__memcpy(buf, s, n);
        s = e;
    }
#endif
    while (s < e) {
        uint32_t k = kctl__jnext(&s, e, t->escaped != 0, u);
        if (n + k < cap) kctl__memcpy(buf + n, u, k);
        n += k;
    }
    if (len) *len = n;
    if (n >= cap) {
        if (cap) buf[0] = '\0';
        return KCTL_ERR_TOO_LARGE;
    }
    buf[n] = '\0';
    return KCTL_OK;
}

KCTL_API bool kctl_json_string_eq(const kctl_json *j, uint32_t v, const char *s) {
    const kctl_json_tok *t = kctl__jget(j, v);
    if (!t || t->type != KCTL_JSON_STRING || !s) return false;
    return kctl__jkey_eq(j, t, s, kctl__strlen(s));
}

/* The integer at v, a number with neither fraction nor exponent or an
   unescaped string of an optional '-' and digits: its magnitude into *out
   and its sign into *neg. INVALID_ARG if it is none; else TOO_LARGE past
   UINT64_MAX (*out then wrapped). */
static int kctl__jint(const kctl_json *j, uint32_t v, uint64_t *out, bool *neg) {
    const kctl_json_tok *t = kctl__jget(j, v);
    const char *s, *e;
    uint64_t x = 0;
    bool big = false;
    if (!t || (t->type != KCTL_JSON_NUMBER && (t->type != KCTL_JSON_STRING || t->escaped))) return KCTL_ERR_INVALID_ARG;
    s = j->text + t->start;
    e = j->text + t->end;
    *neg = s < e && *s == '-';
    s += *neg;
    if (s == e) return KCTL_ERR_INVALID_ARG;
    for (; s < e; s++) {
        unsigned d = (unsigned)(*s - '0');
        if (d > 9) return KCTL_ERR_INVALID_ARG;
        if (x > UINT64_MAX / 10 || (x == UINT64_MAX / 10 && d > UINT64_MAX % 10)) big = true; /* x * 10 + d past the limit */
        x = x * 10 + d;
    }
    *out = x;
    return big ? KCTL_ERR_TOO_LARGE : KCTL_OK;
}

KCTL_API int kctl_json_uint64(const kctl_json *j, uint32_t v, uint64_t *out) {
    uint64_t x = 0;
    bool neg = false;
    int rc = kctl__jint(j, v, &x, &neg);
    if (!out) return KCTL_ERR_INVALID_ARG;
    if (rc != KCTL_OK) return rc;
    if (neg && x) return KCTL_ERR_TOO_LARGE;
    *out = x;
    return KCTL_OK;
}

KCTL_API int kctl_json_int64(const kctl_json *j, uint32_t v, int64_t *out) {
    uint64_t x = 0;
    bool neg = false;
    int rc = kctl__jint(j, v, &x, &neg);
    if (!out) return KCTL_ERR_INVALID_ARG;
    if (rc != KCTL_OK) return rc;
    if (x > (uint64_t)INT64_MAX + neg) return KCTL_ERR_TOO_LARGE; /* INT64_MAX, or -INT64_MIN */
    *out = neg && x ? -(int64_t)(x - 1) - 1 : (int64_t)x; /* (-INT64_MIN itself does not fit in an int64_t) */
    return KCTL_OK;
}

/* A number's exact decimal value: value = (neg ? -1 : 1) * 0.D * 10^exp,
   D its significant digits (no leading or trailing zeros; none for 0),
   exp = shift + the written exponent. */
typedef struct kctl__jdec {
    bool neg;
    const char *int_s, *int_e; /* the integer digits; a fraction's follow the point at int_e */
    uint32_t lead, ndig;       /* leading zeros skipped, significant digits */
    int64_t shift;             /* exp less the written exponent */
    bool xneg;                 /* the written exponent: sign and digits */
    const char *x_s, *x_e;
} kctl__jdec;

/* The k-th significant digit: past the integer digits, over the point. */
static KCTL__SMALL_CALL char kctl__jdec_digit(const kctl__jdec *d, uint32_t k) {
    uint32_t i = d->lead + k;
    return d->int_s[i + (i >= (uint32_t)(d->int_e - d->int_s))];
}

/* s[0..e) a number as the parser checked it: its digits counted in one
   pass, the first and the last that are not 0 noted. */
static void kctl__jdec_of(const char *s, const char *e, kctl__jdec *d) {
    const char *p = s;
    uint32_t k = 0, first = UINT32_MAX, last = 0;
    memset(d, 0, sizeof *d);
    if (*p == '-') { d->neg = true; p++; }
    d->int_s = p;
    for (; p < e && *p != 'e' && *p != 'E'; p++) {
        if (*p == '.') {
            d->int_e = p;
            continue;
        }
        if (*p != '0') {
            if (first == UINT32_MAX) first = k;
            last = k;
        }
        k++;
    }
    if (!d->int_e) d->int_e = p; /* no point */
    if (p < e) { /* the exponent */
        p++;
        if (*p == '+' || *p == '-') d->xneg = *p++ == '-';
        while (p < e - 1 && *p == '0') p++;
        d->x_s = p;
        d->x_e = e;
    }
    if (first == UINT32_MAX) { /* 0: no digits, no sign, no exponent */
        d->neg = false;
        d->x_s = d->x_e = NULL;
        return;
    }
    d->lead = first;
    d->ndig = last - first + 1;
    d->shift = (int64_t)(d->int_e - d->int_s) - (int64_t)first;
}

/* Digit i from the right of d's written exponent (0 past its start), with
   the exponent's sign. */
static KCTL__SMALL_CALL int kctl__jxdig(const kctl__jdec *d, size_t i) {
    int v = (size_t)(d->x_e - d->x_s) > i ? d->x_e[-1 - (ptrdiff_t)i] - '0' : 0;
    return d->xneg ? -v : v;
}

/* Whether two exponents are equal exactly, however many digits they were
   written with: x.exp == y.exp, i.e. S = x.shift - y.shift + Xx - Xy is 0,
   Xx and Xy the written exponents. Digit by digit from the last: S is 0
   only if its last digit is 0 (what is carried, plus the digits), and
   then S / 10 is 0; the carry shrinks tenfold a digit, so it fits. */
static bool kctl__jexp_eq(const kctl__jdec *x, const kctl__jdec *y) {
    size_t lx = (size_t)(x->x_e - x->x_s), ly = (size_t)(y->x_e - y->x_s), n = lx > ly ? lx : ly, i;
    int64_t c = x->shift - y->shift;
    for (i = 0; i < n; i++) {
        int64_t r = c + kctl__jxdig(x, i) - kctl__jxdig(y, i);
        uint64_t m = r < 0 ? (uint64_t)0 - (uint64_t)r : (uint64_t)r, rem;
        m = kctl__udiv64(m, 10, &rem);
        if (rem) return false;
        c = r < 0 ? -(int64_t)m : (int64_t)m;
    }
    return c == 0;
}

static bool kctl__jnum_eq(const char *a, const char *ae, const char *b, const char *be) {
    kctl__jdec x, y;
    uint32_t k;
    kctl__jdec_of(a, ae, &x);
    kctl__jdec_of(b, be, &y);
    if (x.ndig != y.ndig || x.neg != y.neg || !kctl__jexp_eq(&x, &y)) return false;
    for (k = 0; k < x.ndig; k++)
        if (kctl__jdec_digit(&x, k) != kctl__jdec_digit(&y, k)) return false;
    return true;
}

/* ---- doubles, exactly, in integers: the reader's decimal to the nearest
   double (ties to even, as strtod rounds) and the writer's %.17g-style
   digits (correctly rounded, as glibc's printf), with no strtod, no printf
   and no floating-point arithmetic outside the fast path. Big integers of
   32-bit limbs, little end first, large enough for any double and an
   801-digit decimal (about 1.1 KB of stack while a long number is read). */
#ifndef KCTL_NO_JSON_DOUBLE
#define KCTL__BIG_LIMBS 90
typedef struct kctl__big {
    uint32_t n;
    uint32_t d[KCTL__BIG_LIMBS];
} kctl__big;

static void kctl__big_set(kctl__big *b, uint64_t v) {
    b->n = 0;
    while (v) {
        b->d[b->n++] = (uint32_t)v;
        v >>= 32;
    }
}
/* b = b * m + add */
static void kctl__big_muladd(kctl__big *b, uint32_t m, uint32_t add) {
    uint64_t carry = add;
    uint32_t i;
    for (i = 0; i < b->n; i++) {
        uint64_t t = (uint64_t)b->d[i] * m + carry;
        b->d[i] = (uint32_t)t;
        carry = t >> 32;
    }
    if (carry && b->n < KCTL__BIG_LIMBS) b->d[b->n++] = (uint32_t)carry;
}
static void kctl__big_pow5(kctl__big *b, uint32_t k) {
    while (k >= 13) {
        kctl__big_muladd(b, 1220703125u, 0); /* 5^13 */
        k -= 13;
    }
    while (k--) kctl__big_muladd(b, 5, 0);
}
static uint32_t kctl__big_bits(const kctl__big *b) {
    uint32_t top, k = 0;
    if (!b->n) return 0;
    for (top = b->d[b->n - 1]; top; top >>= 1) k++;
    return (b->n - 1) * 32 + k;
}
static void kctl__big_shl(kctl__big *b, uint32_t s) {
    uint32_t w = s / 32, r = s % 32, i;
    if (!b->n) return;
    if (b->n + w + 1 > KCTL__BIG_LIMBS) { b->n = 0; return; } /* never, for the sizes kctl asks for */
    b->d[b->n + w] = 0;
    for (i = b->n; i-- > 0;) {
        if (r) b->d[i + w + 1] |= b->d[i] >> (32 - r);
        b->d[i + w] = b->d[i] << r;
    }
    for (i = 0; i < w; i++) b->d[i] = 0;
    b->n += w + 1;
    while (b->n && !b->d[b->n - 1]) b->n--;
}
static void kctl__big_shr1(kctl__big *b) {
    uint32_t i;
    for (i = 0; i < b->n; i++) b->d[i] = (b->d[i] >> 1) | (i + 1 < b->n ? b->d[i + 1] << 31 : 0);
    while (b->n && !b->d[b->n - 1]) b->n--;
}
static int kctl__big_cmp(const kctl__big *a, const kctl__big *b) {
    uint32_t i;
    if (a->n != b->n) return a->n < b->n ? -1 : 1;
    for (i = a->n; i-- > 0;)
        if (a->d[i] != b->d[i]) return a->d[i] < b->d[i] ? -1 : 1;
    return 0;
}
static void kctl__big_sub(kctl__big *a, const kctl__big *b) { /* a >= b */
    uint64_t borrow = 0;
    uint32_t i;
    for (i = 0; i < a->n; i++) {
        uint64_t t = (uint64_t)a->d[i] - (i < b->n ? b->d[i] : 0) - borrow;
        a->d[i] = (uint32_t)t;
        borrow = (t >> 32) & 1;
    }
    while (a->n && !a->d[a->n - 1]) a->n--;
}
/* b / m, b becomes the quotient; the remainder returned */
static uint32_t kctl__big_divsmall(kctl__big *b, uint32_t m) {
    uint64_t r = 0;
    uint32_t i;
    for (i = b->n; i-- > 0;) {
        uint64_t t = (r << 32) | b->d[i];
        b->d[i] = (uint32_t)(t / m);
        r = t % m;
    }
    while (b->n && !b->d[b->n - 1]) b->n--;
    return (uint32_t)r;
}

static double kctl__bits_double(uint64_t bits) {
    double v;
    memcpy(&v, &bits, sizeof v);
    return v;
}

/* The double nearest to (-1)^neg * a * 10^e10 * 2^e2 / b, where a holds the
   significant digits (b = 1 unless e10 < 0, then b = 5^-e10 and e2 carries
   2^e10): the quotient to 56 bits by long division, then rounded once. */
static double kctl__big_to_double(kctl__big *a, kctl__big *b, int64_t e2, bool sticky, bool neg) {
    int64_t s, e;
    uint64_t q = 0, m, round, low;
    uint32_t sh, i;
    if (!a->n) return kctl__bits_double((uint64_t)neg << 63);
    s = 55 - ((int64_t)kctl__big_bits(a) - (int64_t)kctl__big_bits(b));
    if (s > 0) kctl__big_shl(a, (uint32_t)s);
    else if (s < 0) kctl__big_shl(b, (uint32_t)-s);
    kctl__big_shl(b, 56);
    for (i = 0; i <= 56; i++) { /* a < b * 2^57 */
        q <<= 1;
        if (kctl__big_cmp(a, b) >= 0) {
            kctl__big_sub(a, b);
            q |= 1;
        }
        kctl__big_shr1(b);
    }
    sticky = sticky || a->n != 0;
    e = e2 - s; /* the value is q * 2^e, q of 55 or 56 bits */
    sh = 0;
    for (m = q; m >= (UINT64_C(1) << 53); m >>= 1) sh++;
    if (e + sh < -1074) sh = (uint32_t)(-1074 - e) > 63 ? 63 : (uint32_t)(-1074 - e);
    m = q >> sh;
    round = (q >> (sh - 1)) & 1; /* sh >= 2 */
    low = q & ((UINT64_C(1) << (sh - 1)) - 1);
    e += sh;
    if (round && (low || sticky || (m & 1))) m++;
    if (m == (UINT64_C(1) << 53)) {
        m >>= 1;
        e++;
    }
    if (m >= (UINT64_C(1) << 52)) {
        if (e + 1075 > 2046) return kctl__bits_double(((uint64_t)neg << 63) | (UINT64_C(0x7ff) << 52)); /* overflow: inf, as strtod */
        return kctl__bits_double(((uint64_t)neg << 63) | ((uint64_t)(e + 1075) << 52) | (m - (UINT64_C(1) << 52)));
    }
    return kctl__bits_double(((uint64_t)neg << 63) | m); /* subnormal (or 0) */
}

/* digit(k) for k < nd, the significant digits (no leading zero), times 10^e10. */
typedef char (*kctl__digit_fn)(const void *src, uint32_t k);
static double kctl__dec_to_double(kctl__digit_fn digit, const void *src, uint32_t nd, int64_t e10, bool neg) {
    kctl__big a, b;
    uint64_t small = 0;
    uint32_t k, take = nd > 800 ? 800 : nd, chunk = 0, cn = 0;
    bool sticky = false;
    if (!nd) return kctl__bits_double((uint64_t)neg << 63);
    if (e10 + nd > 310) return kctl__bits_double(((uint64_t)neg << 63) | (UINT64_C(0x7ff) << 52));
    if (e10 + nd < -324) return kctl__bits_double((uint64_t)neg << 63);
    for (k = 0; k < nd && k < 19; k++) small = small * 10 + (uint64_t)(digit(src, k) - '0');
#if defined(FLT_EVAL_METHOD) && FLT_EVAL_METHOD == 0
    if (nd <= 15 && e10 >= -22 && e10 <= 22) { /* exact operands, one rounding: what strtod gives */
        static const double p10[23] = { 1e0, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10, 1e11,
                                         1e12, 1e13, 1e14, 1e15, 1e16, 1e17, 1e18, 1e19, 1e20, 1e21, 1e22 };
        double v = (double)small;
        v = e10 < 0 ? v / p10[-e10] : v * p10[e10];
        return neg ? -v : v;
    }
#endif
    a.n = 0;
    for (k = 0; k < take; k++) {
        chunk = chunk * 10 + (uint32_t)(digit(src, k) - '0');
        if (++cn == 9) {
            kctl__big_muladd(&a, 1000000000u, chunk);
            chunk = cn = 0;
        }
    }
    if (cn) {
        static const uint32_t p[9] = { 1, 10, 100, 1000, 10000, 100000, 1000000, 10000000, 100000000 };
        kctl__big_muladd(&a, p[cn], chunk);
    }
    e10 += (int64_t)(nd - take);
    for (k = take; k < nd && !sticky; k++) sticky = digit(src, k) != '0';
    if (sticky) { /* one more digit, 1: above the truncated digits, below the next step */
        kctl__big_muladd(&a, 10, 1);
        e10--;
    }
    kctl__big_set(&b, 1);
    if (e10 >= 0) {
        kctl__big_pow5(&a, (uint32_t)e10);
    } else {
        kctl__big_pow5(&b, (uint32_t)-e10);
    }
    return kctl__big_to_double(&a, &b, e10, false, neg);
}

/* The exact decimal digits of a double: n in 9-digit chunks (least first),
   v = n * 10^(x - nd + 1), nd digits, x the decimal exponent of the first. */
typedef struct kctl__ddig {
    uint32_t chunks[KCTL__BIG_LIMBS];
    uint32_t nc, nd;
    int x;
} kctl__ddig;

static void kctl__ddig_of(double v, kctl__ddig *d) {
    uint64_t bits, m;
    int64_t e;
    kctl__big n;
    uint32_t top, k;
    memcpy(&bits, &v, sizeof bits);
    e = (int64_t)((bits >> 52) & 0x7ff);
    m = bits & ((UINT64_C(1) << 52) - 1);
    if (e) m |= UINT64_C(1) << 52;
    else e = 1;
    e -= 1075; /* v = m * 2^e */
    d->nc = d->nd = 0;
    d->x = 0;
    if (!m) return;
    kctl__big_set(&n, m);
    if (e >= 0) kctl__big_shl(&n, (uint32_t)e);
    else kctl__big_pow5(&n, (uint32_t)-e); /* v = n * 10^e */
    while (n.n && d->nc < KCTL__BIG_LIMBS) d->chunks[d->nc++] = kctl__big_divsmall(&n, 1000000000u);
    for (top = d->chunks[d->nc - 1], k = 0; top; top /= 10) k++;
    d->nd = (d->nc - 1) * 9 + k;
    d->x = (int)((int64_t)d->nd - 1 + (e < 0 ? e : 0));
}

/* Digit j (0: the first significant one); 0 past the last. */
static int kctl__ddig_at(const kctl__ddig *d, uint32_t j) {
    uint32_t pos, c, k;
    if (j >= d->nd) return 0;
    pos = d->nd - 1 - j;
    c = d->chunks[pos / 9];
    for (k = pos % 9; k; k--) c /= 10;
    return (int)(c % 10);
}

/* The digits rounded to prec (1..17) of them, half to even on the exact
   rest, as printf's %.{prec-1}e rounds: digits[0..prec), *x the exponent. */
static void kctl__ddig_round(const kctl__ddig *d, int prec, char *digits, int *x) {
    int i, tail = kctl__ddig_at(d, (uint32_t)prec);
    bool up = tail > 5;
    for (i = 0; i < prec; i++) digits[i] = (char)('0' + kctl__ddig_at(d, (uint32_t)i));
    *x = d->x;
    if (tail == 5) {
        uint32_t j;
        for (j = (uint32_t)prec + 1; j < d->nd && !up; j++) up = kctl__ddig_at(d, j) != 0;
        if (!up) up = (digits[prec - 1] - '0') & 1;
    }
    if (up) {
        for (i = prec - 1; i >= 0 && digits[i] == '9'; i--) digits[i] = '0';
        if (i >= 0) digits[i]++;
        else {
            digits[0] = '1';
            (*x)++;
        }
    }
}

static char kctl__digit_str(const void *src, uint32_t k) { return ((const char *)src)[k]; }

/* digits[0..nd) with exponent x (of the first), negative or not, as
   %g writes them (no locale), into out (32 bytes): its length. */
static size_t kctl__double_g(const char *dg, int nd, int x, int prec, bool neg, char *out) {
    int i, n = 0;
    while (nd > 1 && dg[nd - 1] == '0') nd--; /* %g drops trailing zeros */
    if (neg) out[n++] = '-';
    if (x < -4 || x >= prec) {
        out[n++] = dg[0];
        if (nd > 1) out[n++] = '.';
        for (i = 1; i < nd; i++) out[n++] = dg[i];
        out[n++] = 'e';
        out[n++] = x < 0 ? '-' : '+';
        if (x < 0) x = -x;
        if (x >= 100) out[n++] = (char)('0' + x / 100);
        out[n++] = (char)('0' + x / 10 % 10);
        out[n++] = (char)('0' + x % 10);
    } else if (x < 0) {
        out[n++] = '0';
        out[n++] = '.';
        for (i = -1; i > x; i--) out[n++] = '0';
        for (i = 0; i < nd; i++) out[n++] = dg[i];
    } else {
        for (i = 0; i <= x; i++) out[n++] = i < nd ? dg[i] : '0';
        if (nd > x + 1) out[n++] = '.';
        for (i = x + 1; i < nd; i++) out[n++] = dg[i];
    }
    out[n] = '\0';
    return (size_t)n;
}
#endif /* !KCTL_NO_JSON_DOUBLE */

#ifdef KCTL_NO_JSON_DOUBLE
KCTL_API int kctl_json_double(const kctl_json *j, uint32_t v, double *out) {
    (void)j; (void)v; (void)out;
    return KCTL_ERR_UNSUPPORTED;
}
#else
static char kctl__digit_jdec(const void *src, uint32_t k) { return kctl__jdec_digit((const kctl__jdec *)src, k); }

KCTL_API int kctl_json_double(const kctl_json *j, uint32_t v, double *out) {
    const kctl_json_tok *t = kctl__jget(j, v);
    kctl__jdec d;
    const char *p;
    int64_t x = 0;
    if (!t || t->type != KCTL_JSON_NUMBER || !out) return KCTL_ERR_INVALID_ARG;
    kctl__jdec_of(j->text + t->start, j->text + t->end, &d); /* -0 is a zero of its own, as strtod reads it */
    for (p = d.x_s; p && p < d.x_e; p++) /* the written exponent: exact up to 17 digits, then it saturates */
        if (x < INT64_C(100000000000000000)) x = x * 10 + (*p - '0');
    *out = kctl__dec_to_double(kctl__digit_jdec, &d, d.ndig, d.shift + (d.xneg ? -x : x) - (int64_t)d.ndig, j->text[t->start] == '-');
    return KCTL_OK;
}
#endif

KCTL_API int kctl_json_bool(const kctl_json *j, uint32_t v, bool *out) {
    const kctl_json_tok *t = kctl__jget(j, v);
    if (!t || (t->type != KCTL_JSON_TRUE && t->type != KCTL_JSON_FALSE) || !out) return KCTL_ERR_INVALID_ARG;
    *out = t->type == KCTL_JSON_TRUE;
    return KCTL_OK;
}

KCTL_API int kctl_json_raw(const kctl_json *j, uint32_t v, const char **text, size_t *len) {
    const kctl_json_tok *t = kctl__jget(j, v);
    uint32_t s, e;
    if (!t || !text || !len) return KCTL_ERR_INVALID_ARG;
    s = t->start;
    e = t->end;
    if (t->type == KCTL_JSON_STRING) { s--; e++; }
    *text = j->text + s;
    *len = e - s;
    return KCTL_OK;
}

static bool kctl__jequal(const kctl_json *a, uint32_t va, const kctl_json *b, uint32_t vb, const kctl_allocator *al);

/* Two objects, a the one with fewer members (<= KCTL__JSON_SCAN_MAX), or
   any two when there is no memory: every name that counts in a is in b
   with an equal value, and b has no other; members named in skip[0..nskip)
   left out on both sides (the API server's comparisons but for metadata
   or status, which small builds make so too). O(|a| * (|a| + |b|)). */
static bool kctl__jequal_scan(const kctl_json *a, uint32_t va, const kctl_json *b, uint32_t vb, const char *const *skip,
                              size_t nskip, const kctl_allocator *al) {
    uint32_t i, m, w;
    size_t s;
    int pass;
    for (pass = 0; pass < 2; pass++) { /* a's members in b, equal; then b's in a */
        for (i = va + 1, m = 0; m < a->toks[va].size; m++, i += 1 + a->toks[i + 1].skip) {
            for (s = 0; s < nskip && !kctl_json_string_eq(a, i, skip[s]); s++) {}
            if (s < nskip || (!pass && !kctl__jlast(a, va, i))) continue;
            w = kctl__jmember_tok(b, vb, a, &a->toks[i]);
            if (w == KCTL_JSON_NONE || (!pass && !kctl__jequal(a, i + 1, b, w, al))) return false;
        }
        { const kctl_json *t = a; a = b; b = t; }
        w = va; va = vb; vb = w;
    }
    return true;
}

/* Two objects: scanning when either is small; else both sorted by name
   (O(n log n)) and walked side by side. */
static bool kctl__jequal_obj(const kctl_json *a, uint32_t va, const kctl_json *b, uint32_t vb, const kctl_allocator *al) {
    kctl__jmview p, q;
    uint32_t k;
    bool eq, lists;
#if !KCTL_SMALL /* (small builds sort small objects too, in the views' own arrays) */
    if (a->toks[va].size <= KCTL__JSON_SCAN_MAX) return kctl__jequal_scan(a, va, b, vb, NULL, 0, al);
    if (b->toks[vb].size <= KCTL__JSON_SCAN_MAX) return kctl__jequal_scan(b, vb, a, va, NULL, 0, al); /* equality is symmetric */
#endif
    q.mem_ = NULL; /* (for the free, if a fails) */
    lists = kctl__jmembers(a, va, al, true, &p) == KCTL_OK && kctl__jmembers(b, vb, al, true, &q) == KCTL_OK;
    eq = lists && p.n == q.n;
    for (k = 0; eq && k < p.n; k++) {
        uint32_t ka = p.keys[p.byname[k]], kb = q.keys[q.byname[k]];
        eq = kctl__jtok_eq(a, &a->toks[ka], b, &b->toks[kb]) && kctl__jequal(a, ka + 1, b, kb + 1, al);
    }
    kctl__jmembers_free(&p);
    kctl__jmembers_free(&q);
    return lists ? eq : kctl__jequal_scan(a, va, b, vb, NULL, 0, al); /* no memory: slower, the same answer */
}

/* kctl_json_equal with the memory for big objects from al (NULL: the
   default allocator). */
static bool kctl__jequal(const kctl_json *a, uint32_t va, const kctl_json *b, uint32_t vb, const kctl_allocator *al) {
    const kctl_json_tok *x = kctl__jget(a, va), *y = kctl__jget(b, vb);
    uint32_t m;
    if (!x || !y) return !x && !y;
    if (x->type != y->type) return false;
    switch (x->type) {
    case KCTL_JSON_STRING:
        return kctl__jtok_eq(a, x, b, y);
    case KCTL_JSON_NUMBER:
        return kctl__jnum_eq(a->text + x->start, a->text + x->end, b->text + y->start, b->text + y->end);
    case KCTL_JSON_ARRAY: {
        uint32_t p = va + 1, q = vb + 1;
        if (x->size != y->size) return false;
        for (m = 0; m < x->size; m++) {
            if (!kctl__jequal(a, p, b, q, al)) return false;
            p += a->toks[p].skip;
            q += b->toks[q].skip;
        }
        return true;
    }
    case KCTL_JSON_OBJECT:
        return kctl__jequal_obj(a, va, b, vb, al);
    default:
        return true; /* true, false, null */
    }
}

KCTL_API bool kctl_json_equal(const kctl_json *a, uint32_t va, const kctl_json *b, uint32_t vb) {
    return kctl__jequal(a, va, b, vb, NULL);
}

KCTL_API bool kctl_json_equal_with(const kctl_json *a, uint32_t va, const kctl_json *b, uint32_t vb,
                                   const kctl_allocator *allocator) {
    return kctl__jequal(a, va, b, vb, allocator);
}

/* ---- the writer */
enum {
    KCTL__JW_OBJ = 1,   /* this level is an object (else an array, or the top) */
    KCTL__JW_ITEMS = 2, /* something was written at this level: a comma comes first */
    KCTL__JW_KEYED = 4, /* object: a name was written, its value is due */
    KCTL__JW_DONE = 8   /* top level: the value is complete */
};

KCTL_API void kctl_jw_init(kctl_jw *w, char *buf, size_t cap) {
    if (!w) return;
    memset(w, 0, sizeof *w);
    w->buf = buf;
    w->cap = buf ? cap : 0;
    if (w->cap) w->buf[0] = '\0';
}

KCTL_API void kctl_jw_init_growable(kctl_jw *w, const kctl_allocator *allocator) {
    if (!w) return;
    memset(w, 0, sizeof *w);
    w->growable = true;
    if (allocator) w->allocator = *allocator;
    if ((!w->allocator.alloc_fn) != (!w->allocator.free_fn)) w->err = KCTL_ERR_INVALID_ARG;
}

KCTL_API void kctl_jw_free(kctl_jw *w) {
    if (!w || !w->growable) return;
    kctl__free(&w->allocator, w->buf);
    w->buf = NULL;
    w->len = w->cap = 0;
}

/* Room for n more bytes and the NUL: false (w->err set) when there is none. */
static bool kctl__jw_grow(kctl_jw *w, size_t n) {
    size_t cap;
    char *nb;
    if (!w->growable) { w->err = KCTL_ERR_FULL; return false; }
    cap = w->cap ? w->cap : 256;
    while (n >= cap - w->len) {
        if (cap > SIZE_MAX / 2) { w->err = KCTL_ERR_NOMEM; return false; }
        cap *= 2;
    }
    if (!(nb = (char *)kctl__alloc(&w->allocator, cap))) { w->err = KCTL_ERR_NOMEM; return false; }
    if (w->len) kctl__memcpy(nb, w->buf, w->len);
    kctl__free(&w->allocator, w->buf);
    w->buf = nb;
    w->cap = cap;
    return true;
}

/* Inline: a document is written a few bytes at a time. */
static inline void kctl__jw_put(kctl_jw *w, const char *s, size_t n) {
    if (w->err) return;
    if ((n >= w->cap - w->len || w->cap == 0) && !kctl__jw_grow(w, n)) return; /* keep room for the NUL */
    kctl__memcpy(w->buf + w->len, s, n);
    w->len += n;
    w->buf[w->len] = '\0';
}

/* Before a value (key false) or a member name (key true): check the
   context and write a comma if one is due. */
static bool kctl__jw_item(kctl_jw *w, bool key) {
    uint8_t *st, s;
    if (!w || w->err) return false;
    st = &w->state[w->depth];
    s = *st;
    if (s & KCTL__JW_OBJ ? key == ((s & KCTL__JW_KEYED) != 0) : key || (s & KCTL__JW_DONE)) {
        w->err = KCTL_ERR_INVALID_ARG; /* a name where a value is due, a value where a name is, a second top value */
        return false;
    }
    if (s & KCTL__JW_OBJ) s ^= KCTL__JW_KEYED; /* a name, then its value */
    if (key || !(s & KCTL__JW_OBJ)) { /* (in an object the comma comes before the name) */
        if (s & KCTL__JW_ITEMS) kctl__jw_put(w, ",", 1);
        s |= KCTL__JW_ITEMS;
    }
    *st = w->depth ? s : s | KCTL__JW_DONE;
    return w->err == 0;
}
#define kctl__jw_value(w) kctl__jw_item(w, false)

/* An object's (obj) or an array's opening (open) or closing bracket. */
static void kctl__jw_bracket(kctl_jw *w, bool obj, bool open) {
    if (open) {
        if (!kctl__jw_value(w)) return;
        if (w->depth >= KCTL_JSON_MAX_DEPTH) { w->err = KCTL_ERR_TOO_LARGE; return; }
        w->state[++w->depth] = obj ? KCTL__JW_OBJ : 0;
    } else {
        uint8_t st;
        if (!w || w->err) return;
        st = w->state[w->depth];
        if (w->depth == 0 || ((st & KCTL__JW_OBJ) != 0) != obj || (st & KCTL__JW_KEYED)) {
            w->err = KCTL_ERR_INVALID_ARG;
            return;
        }
        w->depth--;
    }
    kctl__jw_put(w, &"[{]}"[obj + 2 * !open], 1);
}

KCTL_API void kctl_jw_object_begin(kctl_jw *w) { kctl__jw_bracket(w, true, true); }
KCTL_API void kctl_jw_object_end(kctl_jw *w) { kctl__jw_bracket(w, true, false); }
KCTL_API void kctl_jw_array_begin(kctl_jw *w) { kctl__jw_bracket(w, false, true); }
KCTL_API void kctl_jw_array_end(kctl_jw *w) { kctl__jw_bracket(w, false, false); }

/* A quoted, escaped string; its bytes must be UTF-8. */
#if KCTL_SMALL /* (a character at a time: one put for each) */
static void kctl__jw_quote(kctl_jw *w, const char *s, size_t n) {
    const unsigned char *p = (const unsigned char *)s, *e = p + n;
    kctl__jw_put(w, "\"", 1);
    while (p < e && !w->err) {
        unsigned char c = *p;
        const char *q = c && c != '/' ? kctl__strchr(kctl__jesc + 8, c) : NULL; /* written \" \\ \b \f \n \r \t */
        char esc[6];
        uint32_t k = 1;
        esc[0] = '\\';
        if (q) {
            esc[1] = q[-8];
            kctl__jw_put(w, esc, 2);
        } else if (c < 0x20) {
            esc[1] = 'u'; esc[2] = '0'; esc[3] = '0';
            esc[4] = (char)('0' + (c >> 4)); esc[5] = "0123456789abcdef"[c & 15];
            kctl__jw_put(w, esc, 6);
        } else {
            if (c >= 0x80 && !(k = kctl__utf8_len(p, (uint32_t)(e - p > 4 ? 4 : e - p)))) {
                w->err = KCTL_ERR_INVALID_ARG;
                return;
            }
            kctl__jw_put(w, (const char *)p, k);
        }
        p += k;
    }
    kctl__jw_put(w, "\"", 1);
}
#else
static void kctl__jw_quote(kctl_jw *w, const char *s, size_t n) {
    static const char hex[] = "0123456789abcdef", from[] = "\"\\\b\f\n\r\t"; /* written \" \\ \b \f \n \r \t */
    const unsigned char *p = (const unsigned char *)s, *e = p + n, *run = p;
    const char *q;
    kctl__jw_put(w, "\"", 1);
    while (p < e && !w->err) {
        unsigned char c = *p;
        char esc[6];
        size_t k = 2;
        if (c >= 0x80) {
            uint32_t u = kctl__utf8_len(p, (uint32_t)(e - p > 4 ? 4 : e - p));
            if (!u) { w->err = KCTL_ERR_INVALID_ARG; return; }
            p += u;
            continue;
        }
        if (c >= 0x20 && c != '"' && c != '\\') { p++; continue; }
        kctl__jw_put(w, (const char *)run, (size_t)(p - run));
        esc[0] = '\\';
        q = c ? kctl__strchr(from, c) : NULL;
        if (q) {
            esc[1] = "\"\\bfnrt"[q - from];
        } else {
            esc[1] = 'u'; esc[2] = '0'; esc[3] = '0';
            esc[4] = hex[c >> 4]; esc[5] = hex[c & 15];
            k = 6;
        }
        kctl__jw_put(w, esc, k);
        run = ++p;
    }
    kctl__jw_put(w, (const char *)run, (size_t)(p - run));
    kctl__jw_put(w, "\"", 1);
}
#endif

/* A member name given as the raw text of a parsed string (quotes included). */
static KCTL__SMALL_INLINE32 void kctl__jw_key_raw(kctl_jw *w, const char *raw, size_t n) {
    if (kctl__jw_item(w, true) && raw) kctl__jw_put(w, raw, n);
}

KCTL_API void kctl_jw_key(kctl_jw *w, const char *name) {
    if (!w || w->err) return;
    if (!name) { w->err = KCTL_ERR_INVALID_ARG; return; }
    kctl__jw_key_raw(w, NULL, 0);
    kctl__jw_quote(w, name, kctl__strlen(name));
    kctl__jw_put(w, ":", 1);
}

KCTL_API void kctl_jw_string_n(kctl_jw *w, const char *s, size_t n) {
    if (!w || w->err) return;
    if (!s && n) { w->err = KCTL_ERR_INVALID_ARG; return; }
    if (s && n == KCTL_NTS) n = kctl__strlen(s);
    if (kctl__jw_value(w)) kctl__jw_quote(w, s ? s : "", n);
}

KCTL_API void kctl_jw_string(kctl_jw *w, const char *s) {
    kctl_jw_string_n(w, s, s ? KCTL_NTS : 1); /* (NULL: INVALID_ARG there) */
}

KCTL_API void kctl_jw_uint64(kctl_jw *w, uint64_t v) {
    char buf[24], *p = kctl__dec(buf + sizeof buf, v);
    if (kctl__jw_value(w)) kctl__jw_put(w, p, (size_t)(buf + sizeof buf - p));
}

KCTL_API void kctl_jw_int64(kctl_jw *w, int64_t v) {
    char buf[24], *p = kctl__dec(buf + sizeof buf, v < 0 ? (uint64_t)0 - (uint64_t)v : (uint64_t)v);
    if (v < 0) *--p = '-';
    if (kctl__jw_value(w)) kctl__jw_put(w, p, (size_t)(buf + sizeof buf - p));
}

#ifdef KCTL_NO_JSON_DOUBLE
KCTL_API void kctl_jw_double(kctl_jw *w, double v) {
    (void)v;
    if (w && !w->err) w->err = KCTL_ERR_UNSUPPORTED;
}
#else
KCTL_API void kctl_jw_double(kctl_jw *w, double v) {
    kctl__ddig d;
    char buf[32], dg[17];
    uint64_t bits, back;
    int prec, x = 0;
    size_t n;
    bool neg;
    if (!w || w->err) return;
    memcpy(&bits, &v, sizeof bits); /* the bits: no compare at x87's excess precision */
    if (((bits >> 52) & 0x7ff) == 0x7ff) { w->err = KCTL_ERR_INVALID_ARG; return; } /* NaN, infinities */
    neg = (bits >> 63) != 0;
    kctl__ddig_of(v, &d);
    for (prec = 1; prec <= 17; prec++) { /* the shortest %.{prec}g that reads back the same */
        double r;
        kctl__ddig_round(&d, prec, dg, &x);
        if (!d.nd) break;
        r = kctl__dec_to_double(kctl__digit_str, dg, (uint32_t)prec, (int64_t)x - prec + 1, neg);
        memcpy(&back, &r, sizeof back);
        if (back == bits) break;
    }
    if (prec > 17) prec = 17;
    n = kctl__double_g(dg, prec, x, prec, neg, buf);
    if (kctl__jw_value(w)) kctl__jw_put(w, buf, n);
}
#endif

KCTL_API void kctl_jw_bool(kctl_jw *w, bool v) {
    if (kctl__jw_value(w)) kctl__jw_put(w, v ? "true" : "false", v ? 4 : 5);
}

KCTL_API void kctl_jw_null(kctl_jw *w) {
    if (kctl__jw_value(w)) kctl__jw_put(w, "null", 4);
}

KCTL_API void kctl_jw_raw(kctl_jw *w, const char *json, size_t n) {
    if (!w || w->err) return;
    if (json && n == KCTL_NTS) n = kctl__strlen(json);
    if (!json || !n) { w->err = KCTL_ERR_INVALID_ARG; return; }
    if (kctl__jw_value(w)) kctl__jw_put(w, json, n);
}

KCTL_API void kctl_jw_value(kctl_jw *w, const kctl_json *j, uint32_t v) {
    const char *text;
    size_t n;
    if (!w || w->err) return;
    if (kctl_json_raw(j, v, &text, &n) != KCTL_OK) { w->err = KCTL_ERR_INVALID_ARG; return; }
    kctl_jw_raw(w, text, n); /* a parsed value is valid JSON as it stands */
}

KCTL_API int kctl_jw_finish(kctl_jw *w, const char **text, size_t *len) {
    if (!w) return KCTL_ERR_INVALID_ARG;
    if (!w->err && (w->depth != 0 || !(w->state[0] & KCTL__JW_DONE))) return KCTL_ERR_INVALID_ARG;
    if (w->err) return w->err;
    if (text) *text = w->buf;
    if (len) *len = w->len;
    return KCTL_OK;
}

/* ---- merge patch (RFC 7386) */
#ifndef KCTL_NO_MERGE_PATCH
static void kctl__jmerge(const kctl_json *doc, uint32_t vd, const kctl_json *patch, uint32_t vp, kctl_jw *out);

/* A member name given as another document's name token, then the colon. */
static void kctl__jw_key_tok(kctl_jw *w, const kctl_json *j, uint32_t k) {
    const char *raw = NULL;
    size_t n = 0;
    kctl_json_raw(j, k, &raw, &n);
    kctl__jw_key_raw(w, raw, n);
    kctl__jw_put(w, ":", 1);
}

/* The members of document object vd (d; NULL: none) patched by patch object
   vp (p), both of at most KCTL__JSON_SCAN_MAX members: by scanning. */
static void kctl__jmerge_scan(const kctl_json *doc, uint32_t vd, const kctl_json_tok *d, const kctl_json *patch, uint32_t vp,
                              const kctl_json_tok *p, kctl_jw *out) {
    uint32_t i, m;
    for (i = vd + 1, m = 0; d && m < d->size && !out->err; m++, i += 1 + doc->toks[i + 1].skip) {
        uint32_t pv;
        if (!kctl__jlast(doc, vd, i)) continue;
        pv = kctl__jmember_tok(patch, vp, doc, &doc->toks[i]);
        if (pv != KCTL_JSON_NONE && patch->toks[pv].type == KCTL_JSON_NULL) continue; /* removed */
        kctl__jw_key_tok(out, doc, i);
        if (pv == KCTL_JSON_NONE) kctl_jw_value(out, doc, i + 1);
        else kctl__jmerge(doc, i + 1, patch, pv, out);
    }
    for (i = vp + 1, m = 0; m < p->size && !out->err; m++, i += 1 + patch->toks[i + 1].skip) {
        if (patch->toks[i + 1].type == KCTL_JSON_NULL || !kctl__jlast(patch, vp, i)) continue;
        if (d && kctl__jmember_tok(doc, vd, patch, &patch->toks[i]) != KCTL_JSON_NONE) continue; /* done above */
        kctl__jw_key_tok(out, patch, i);
        kctl__jmerge(NULL, KCTL_JSON_NONE, patch, i + 1, out); /* new: nulls inside vanish too */
    }
}

/* The same for bigger objects: the members that count on either side,
   sorted by name, matched in one walk of both. O(n log n). */
static void kctl__jmerge_sorted(const kctl_json *doc, uint32_t vd, const kctl_json_tok *d, const kctl_json *patch, uint32_t vp,
                                kctl_jw *out) {
    kctl__jmview dv, pv;
    uint32_t i, k, *dmatch = NULL, *pmatch; /* per member that counts: the other side's value, or NONE */
    uint64_t bytes;
    int rc;
    memset(&dv, 0, sizeof dv);
    rc = kctl__jmembers(patch, vp, &out->allocator, true, &pv);
    if (rc == KCTL_OK && d) rc = kctl__jmembers(doc, vd, &out->allocator, true, &dv);
    bytes = ((uint64_t)dv.n + pv.n) * sizeof *dmatch;
    if (rc == KCTL_OK && (bytes != (size_t)bytes || !(dmatch = (uint32_t *)kctl__alloc(&out->allocator, (size_t)bytes + 1))))
        rc = KCTL_ERR_NOMEM;
    if (rc != KCTL_OK) {
        if (!out->err) out->err = rc;
        kctl__jmembers_free(&pv);
        kctl__jmembers_free(&dv);
        return;
    }
    pmatch = dmatch + dv.n;
    for (i = 0, k = 0; i < dv.n || k < pv.n;) {
        int r = i == dv.n ? 1 : k == pv.n ? -1
              : kctl__jtok_cmp(doc, &doc->toks[dv.keys[dv.byname[i]]], patch, &patch->toks[pv.keys[pv.byname[k]]]);
        if (r <= 0) dmatch[dv.byname[i]] = r ? KCTL_JSON_NONE : pv.keys[pv.byname[k]] + 1;
        if (r >= 0) pmatch[pv.byname[k]] = r ? KCTL_JSON_NONE : dv.keys[dv.byname[i]] + 1;
        i += r <= 0;
        k += r >= 0;
    }
    for (k = 0; k < dv.n && !out->err; k++) { /* the document's members, patched */
        uint32_t key = dv.keys[k], pval = dmatch[k];
        if (pval != KCTL_JSON_NONE && patch->toks[pval].type == KCTL_JSON_NULL) continue; /* removed */
        kctl__jw_key_tok(out, doc, key);
        if (pval == KCTL_JSON_NONE) kctl_jw_value(out, doc, key + 1);
        else kctl__jmerge(doc, key + 1, patch, pval, out);
    }
    for (k = 0; k < pv.n && !out->err; k++) { /* then the patch's new ones */
        uint32_t key = pv.keys[k];
        if (patch->toks[key + 1].type == KCTL_JSON_NULL || pmatch[k] != KCTL_JSON_NONE) continue;
        kctl__jw_key_tok(out, patch, key);
        kctl__jmerge(NULL, KCTL_JSON_NONE, patch, key + 1, out); /* nulls inside vanish too */
    }
    kctl__free(&out->allocator, dmatch);
    kctl__jmembers_free(&pv);
    kctl__jmembers_free(&dv);
}

static void kctl__jmerge(const kctl_json *doc, uint32_t vd, const kctl_json *patch, uint32_t vp, kctl_jw *out) {
    const kctl_json_tok *p = kctl__jget(patch, vp), *d = kctl__jget(doc, vd);
    if (!p) { out->err = out->err ? out->err : KCTL_ERR_INVALID_ARG; return; }
    if (p->type != KCTL_JSON_OBJECT) { /* anything but an object replaces */
        kctl_jw_value(out, patch, vp);
        return;
    }
    if (d && d->type != KCTL_JSON_OBJECT) d = NULL;
    kctl_jw_object_begin(out);
    if (p->size <= KCTL__JSON_SCAN_MAX && (!d || d->size <= KCTL__JSON_SCAN_MAX)) kctl__jmerge_scan(doc, vd, d, patch, vp, p, out);
    else kctl__jmerge_sorted(doc, vd, d, patch, vp, out);
    kctl_jw_object_end(out);
}

KCTL_API int kctl_json_merge_patch(const kctl_json *doc, uint32_t vd, const kctl_json *patch, uint32_t vp, kctl_jw *out) {
    if (!out) return KCTL_ERR_INVALID_ARG;
    if (!kctl__jget(patch, vp)) { if (!out->err) out->err = KCTL_ERR_INVALID_ARG; return out->err; }
    kctl__jmerge(doc, vd, patch, vp, out);
    return out->err;
}
#else
KCTL_API int kctl_json_merge_patch(const kctl_json *doc, uint32_t vd, const kctl_json *patch, uint32_t vp, kctl_jw *out) {
    (void)doc;
    (void)vd;
    (void)patch;
    (void)vp;
    if (!out) return KCTL_ERR_INVALID_ARG;
    if (!out->err) out->err = KCTL_ERR_UNSUPPORTED;
    return out->err;
}
#endif /* KCTL_NO_MERGE_PATCH */

/* ---- values by path, straight over the text: no tokens, no memory */

/* The index of the quote that closes the string opened at s[i] (quotes
   after an odd run of backslashes are inside), or n. */
static KCTL__UNUSED uint32_t kctl__jquote_end(const char *s, uint32_t i, uint32_t n) {
    for (i++; i < n; i++) {
        const char *q = (const char *)kctl__memchr(s + i, '"', n - i);
        uint32_t k;
        if (!q) return n;
        i = (uint32_t)(q - s);
        for (k = i; s[k - 1] == '\\'; k--) {} /* the opening quote stops it */
        if ((i - k) % 2 == 0) return i;
    }
    return n;
}

/* Move p->pos (< p->len) past the value that starts there: a fast skip,
   since the text was validated before: strings end at their closing
   quote, containers at their closing bracket; scalars at the top are
   checked as the parser checks them. Nothing at or past p->len is read.
   PROTO if the value does not end inside the text. O(its bytes). */
#if KCTL_SMALL /* the reader's checks of strings and scalars (it checks more): the same end in valid text */
static int kctl__jskip(kctl__jparse *p) {
    uint32_t depth = 0;
    bool esc;
    do {
        char c;
        if (p->pos >= p->len) return KCTL_ERR_PROTO;
        c = p->s[p->pos];
        if (c == '"') {
            if (kctl__jstring(p, &esc) != KCTL_OK) return KCTL_ERR_PROTO;
            p->pos++;
        } else if ((c | 0x20) == '{') { /* { or [ */
            depth++;
            p->pos++;
        } else if ((c | 0x20) == '}') { /* } or ] */
            if (!depth) return KCTL_ERR_PROTO;
            depth--;
            p->pos++;
        } else if (depth) { /* inside a container: a byte at a time, up to the next quote or bracket */
            p->pos++;
        } else if (c == 't' || c == 'f' || c == 'n') {
            uint32_t k = kctl__jword(p->s + p->pos, p->len - p->pos);
            if (!k) return KCTL_ERR_PROTO;
            p->pos += k;
        } else if (kctl__jnumber(p) != KCTL_OK) {
            return KCTL_ERR_PROTO;
        }
    } while (depth);
    return KCTL_OK;
}
#else
static int kctl__jskip(kctl__jparse *p) {
    const char *s = p->s;
    uint32_t i = p->pos, n = p->len, depth = 0;
    do {
        unsigned char c;
        if (i >= n) return KCTL_ERR_PROTO;
        c = (unsigned char)s[i];
        if (c == '"') {
            if ((i = kctl__jquote_end(s, i, n)) >= n) return KCTL_ERR_PROTO;
            i++;
        } else if ((c | 0x20) == '{') { /* { or [ */
            depth++;
            i++;
        } else if ((c | 0x20) == '}') { /* } or ] */
            if (!depth) return KCTL_ERR_PROTO;
            depth--;
            i++;
        } else if (depth) { /* inside a container: up to the next quote or bracket */
            for (i++; i < n; i++) {
                c = (unsigned char)s[i];
                if (c == '"' || (c | 0x20) == '{' || (c | 0x20) == '}') break;
            }
        } else if (c == 't' || c == 'f' || c == 'n') {
            uint32_t k = kctl__jword(s + i, n - i);
            if (!k) return KCTL_ERR_PROTO;
            i += k;
        } else {
            p->pos = i;
            if (kctl__jnumber(p) != KCTL_OK) return KCTL_ERR_PROTO;
            i = p->pos;
        }
    } while (depth);
    p->pos = i;
    return KCTL_OK;
}
#endif

/* The start of the next item of the container whose text is
   p->s[0..p->len), p->pos after its opening bracket or after an item: 1,
   with a member's name at [*ns, *ne) (inside its quotes, validated; *esc:
   it has escapes) and p->pos at the item's value; 0 at the closing
   bracket; PROTO if the text is not JSON there. */
static int kctl__jitem_head(kctl__jparse *p, bool obj, uint32_t *ns, uint32_t *ne, bool *esc) {
    kctl__jws(p);
    if (p->pos >= p->len) return KCTL_ERR_PROTO;
    if (p->s[p->pos] == (obj ? '}' : ']')) return 0;
    if (obj) {
        if (p->s[p->pos] != '"') return KCTL_ERR_PROTO;
        *ns = p->pos + 1;
        if (kctl__jstring(p, esc) != KCTL_OK) return KCTL_ERR_PROTO;
        *ne = p->pos++;
        if (!kctl__jeat(p, ':')) return KCTL_ERR_PROTO;
        kctl__jws(p);
    }
    return 1;
}

/* After an item's value: past the comma, or at the closing bracket. */
static int kctl__jitem_tail(kctl__jparse *p, bool obj) {
    if (kctl__jeat(p, ',')) return KCTL_OK;
    return p->pos < p->len && p->s[p->pos] == (obj ? '}' : ']') ? KCTL_OK : KCTL_ERR_PROTO;
}

/* The next item: its name (objects) at [*ns, *ne), its value at [*vs, *ve),
   p->pos past it. 1; 0 at the end; PROTO. */
static int kctl__jitem(kctl__jparse *p, bool obj, uint32_t *ns, uint32_t *ne, bool *esc, uint32_t *vs, uint32_t *ve) {
    int r = kctl__jitem_head(p, obj, ns, ne, esc);
    if (r <= 0) return r;
    *vs = p->pos;
    if (kctl__jskip(p) != KCTL_OK) return KCTL_ERR_PROTO;
    *ve = p->pos;
    return kctl__jitem_tail(p, obj) == KCTL_OK ? 1 : KCTL_ERR_PROTO;
}

#if KCTL_SMALL
/* Small builds: the value that `path` (already checked; "": the whole
   of p's text) names inside the value at p->pos: OK with its span in
   [*vs, *ve), NOT_FOUND, PROTO. A step at a time, with no recursion: the container is walked
   over whole, its last member of the name (or its element at the index)
   noted, then that value is walked for the next step. O(the value's bytes
   times the steps) at worst. (depth: unused) */
static int kctl__jwalk(kctl__jparse *p, const char *path, uint32_t depth, uint32_t *vs, uint32_t *ve) {
    kctl__jseg g;
    uint32_t ns = 0, ne = 0, s = 0, e = 0, i;
    bool esc = false, obj, found;
    int r;
    (void)depth;
    while (kctl__jpath_next(&path, &g) > 0) {
        obj = g.name != NULL;
        if (p->pos >= p->len || p->s[p->pos] != (obj ? '{' : '[')) /* nothing of that kind here */
            return kctl__jskip(p) == KCTL_OK ? KCTL_ERR_NOT_FOUND : KCTL_ERR_PROTO;
        p->pos++;
        for (i = 0, found = false; (r = kctl__jitem(p, obj, &ns, &ne, &esc, vs, ve)) > 0; i++)
            if (obj ? kctl__jseg_eq(p->s + ns, p->s + ne, esc, &g) : i == g.index) {
                found = true;
                s = *vs;
                e = *ve;
            }
        if (r < 0) return r;
        if (!found) return KCTL_ERR_NOT_FOUND;
        p->pos = s; /* the next step inside it */
        p->len = e;
    }
    *vs = p->pos;
    *ve = p->len;
    return KCTL_OK;
}
#else
/* Walk the value at p->pos (p->pos moves past it) for what the rest of
   the path (from `path`, already checked) names inside it: OK with its
   span in [*vs, *ve), NOT_FOUND, PROTO. One pass: the value of a member
   that matches is walked for the rest of the path as it is passed over,
   and a later member of the same name replaces the answer (the last
   counts). O(the value's bytes). Recursion: a level a step taken, at most
   KCTL__JSON_DEPTH_CAP (as deep as a validated document nests). */
static int kctl__jwalk(kctl__jparse *p, const char *path, uint32_t depth, uint32_t *vs, uint32_t *ve) {
    kctl__jseg g;
    uint32_t ns = 0, ne = 0, i = 0, start = p->pos;
    bool esc = false, obj;
    int r, rc = KCTL_ERR_NOT_FOUND;
    if (kctl__jpath_next(&path, &g) <= 0) { /* here */
        if ((r = kctl__jskip(p)) != KCTL_OK) return r;
        *vs = start;
        *ve = p->pos;
        return KCTL_OK;
    }
    obj = g.name != NULL;
    if (p->pos >= p->len || p->s[p->pos] != (obj ? '{' : '[')) /* nothing of that kind here */
        return kctl__jskip(p) == KCTL_OK ? KCTL_ERR_NOT_FOUND : KCTL_ERR_PROTO;
    if (depth >= KCTL__JSON_DEPTH_CAP) return KCTL_ERR_PROTO;
    p->pos++;
    while ((r = kctl__jitem_head(p, obj, &ns, &ne, &esc)) > 0) {
        if (obj ? kctl__jseg_eq(p->s + ns, p->s + ne, esc, &g) : i++ == g.index) {
            rc = kctl__jwalk(p, path, depth + 1, vs, ve);
            if (rc == KCTL_ERR_PROTO) return rc;
        } else if (kctl__jskip(p) != KCTL_OK) {
            return KCTL_ERR_PROTO;
        }
        if (kctl__jitem_tail(p, obj) != KCTL_OK) return KCTL_ERR_PROTO;
    }
    if (r < 0) return r;
    p->pos++; /* the closing bracket */
    return rc;
}
#endif

static void kctl__jview(const char *s, uint32_t vs, uint32_t ve, kctl_json_value *out) {
    out->text = s + vs;
    out->len = ve - vs;
    out->type = vs < ve ? kctl__jtype_at(s[vs]) : KCTL_JSON_INVALID;
}

/* kctl_json_value_get: the path is checked whole first, so a malformed
   one is INVALID_ARG whatever the document holds. */
KCTL_API int kctl_json_value_get(const kctl_json_value *from, const char *path, kctl_json_value *out) {
    kctl__jseg g;
    kctl__jparse p;
    const char *s;
    uint32_t vs = 0, ve = 0;
    int r;
    if (!out) return KCTL_ERR_INVALID_ARG;
    memset(out, 0, sizeof *out);
    if (!from || !from->text || from->len >= UINT32_MAX) return KCTL_ERR_INVALID_ARG;
    if (!path) path = "";
    for (s = path; (r = kctl__jpath_next(&s, &g)) > 0;) {}
    if (r < 0) return KCTL_ERR_INVALID_ARG;
#if !KCTL_SMALL /* (small builds' walk takes no step for it) */
    if (!*path) { /* the value itself, as it is */
        kctl__jview(from->text, 0, (uint32_t)from->len, out);
        return KCTL_OK;
    }
#endif
    memset(&p, 0, sizeof p);
    p.s = from->text;
    p.len = (uint32_t)from->len;
    if ((r = kctl__jwalk(&p, path, 0, &vs, &ve)) != KCTL_OK) return r;
    kctl__jview(from->text, vs, ve, out);
    return KCTL_OK;
}

/* The scalar at path from `from` as a one-token document, for the token
   getters (a container: INVALID_ARG, the wrong type for all of them). */
static int kctl__jvalue_tok(const kctl_json_value *from, const char *path, kctl_json_tok *tok, kctl_json *j) {
    kctl_json_value v;
    kctl_json_limits lim;
    int rc = kctl_json_value_get(from, path, &v);
    if (rc != KCTL_OK) return rc;
    if (v.type == KCTL_JSON_OBJECT || v.type == KCTL_JSON_ARRAY || v.type == KCTL_JSON_INVALID) return KCTL_ERR_INVALID_ARG;
    lim.max_depth = 1;
    lim.max_bytes = UINT32_MAX;
    return kctl_json_parse(v.text, v.len, tok, 1, &lim, j) == KCTL_OK ? KCTL_OK : KCTL_ERR_PROTO;
}

KCTL_API int kctl_json_value_get_string(const kctl_json_value *from, const char *path, char *buf, size_t cap, size_t *len) {
    kctl_json_tok t;
    kctl_json j;
    int rc;
    if (len) *len = 0;
    if (!buf && cap) return KCTL_ERR_INVALID_ARG;
    if ((rc = kctl__jvalue_tok(from, path, &t, &j)) != KCTL_OK) return rc;
    return kctl_json_string(&j, 0, buf, cap, len);
}

KCTL_API int kctl_json_value_get_int64(const kctl_json_value *from, const char *path, int64_t *out) {
    kctl_json_tok t;
    kctl_json j;
    int rc;
    if (!out) return KCTL_ERR_INVALID_ARG;
    if ((rc = kctl__jvalue_tok(from, path, &t, &j)) != KCTL_OK) return rc;
    return kctl_json_int64(&j, 0, out);
}

KCTL_API int kctl_json_value_get_uint64(const kctl_json_value *from, const char *path, uint64_t *out) {
    kctl_json_tok t;
    kctl_json j;
    int rc;
    if (!out) return KCTL_ERR_INVALID_ARG;
    if ((rc = kctl__jvalue_tok(from, path, &t, &j)) != KCTL_OK) return rc;
    return kctl_json_uint64(&j, 0, out);
}

KCTL_API int kctl_json_value_get_double(const kctl_json_value *from, const char *path, double *out) {
    kctl_json_tok t;
    kctl_json j;
    int rc;
    if (!out) return KCTL_ERR_INVALID_ARG;
    if ((rc = kctl__jvalue_tok(from, path, &t, &j)) != KCTL_OK) return rc;
    return kctl_json_double(&j, 0, out);
}

KCTL_API int kctl_json_value_get_bool(const kctl_json_value *from, const char *path, bool *out) {
    kctl_json_tok t;
    kctl_json j;
    int rc;
    if (!out) return KCTL_ERR_INVALID_ARG;
    if ((rc = kctl__jvalue_tok(from, path, &t, &j)) != KCTL_OK) return rc;
    return kctl_json_bool(&j, 0, out);
}

/* The whole of text[0..len), valid JSON, less the whitespace around it. */
static int kctl__jtrim(const char *text, size_t len, kctl_json_value *root) {
    uint32_t a = 0, e = (uint32_t)len; /* (below UINT32_MAX: validated) */
    while (a < e && kctl__jspace(text[a])) a++;
    while (e > a && kctl__jspace(text[e - 1])) e--;
    kctl__jview(text, a, e, root);
    return KCTL_OK;
}

/* The same of a text that holds one JSON value, validated: OK, PROTO,
   TOO_LARGE, INVALID_ARG. */
static int kctl__jroot(const char *text, size_t len, kctl_json_value *root) {
    kctl_json j;
    int rc;
    memset(root, 0, sizeof *root);
    if (!text) return KCTL_ERR_INVALID_ARG;
    if (len == KCTL_NTS) len = kctl__strlen(text);
    if ((rc = kctl_json_parse(text, len, NULL, 0, NULL, &j)) != KCTL_OK) return rc;
    return kctl__jtrim(text, len, root);
}

KCTL_API int kctl_json_get(const char *text, size_t len, const char *path, kctl_json_value *out) {
    kctl_json_value r;
    int rc;
    if (!out) return KCTL_ERR_INVALID_ARG;
    memset(out, 0, sizeof *out);
    if ((rc = kctl__jroot(text, len, &r)) != KCTL_OK) return rc;
    return kctl_json_value_get(&r, path, out);
}

KCTL_API int kctl_json_get_string(const char *text, size_t len, const char *path, char *buf, size_t cap, size_t *slen) {
    kctl_json_value r;
    int rc;
    if (slen) *slen = 0;
    if ((rc = kctl__jroot(text, len, &r)) != KCTL_OK) return rc;
    return kctl_json_value_get_string(&r, path, buf, cap, slen);
}

KCTL_API int kctl_json_get_int64(const char *text, size_t len, const char *path, int64_t *out) {
    kctl_json_value r;
    int rc = kctl__jroot(text, len, &r);
    return rc != KCTL_OK ? rc : kctl_json_value_get_int64(&r, path, out);
}

KCTL_API int kctl_json_get_uint64(const char *text, size_t len, const char *path, uint64_t *out) {
    kctl_json_value r;
    int rc = kctl__jroot(text, len, &r);
    return rc != KCTL_OK ? rc : kctl_json_value_get_uint64(&r, path, out);
}

KCTL_API int kctl_json_get_double(const char *text, size_t len, const char *path, double *out) {
    kctl_json_value r;
    int rc = kctl__jroot(text, len, &r);
    return rc != KCTL_OK ? rc : kctl_json_value_get_double(&r, path, out);
}

KCTL_API int kctl_json_get_bool(const char *text, size_t len, const char *path, bool *out) {
    kctl_json_value r;
    int rc = kctl__jroot(text, len, &r);
    return rc != KCTL_OK ? rc : kctl_json_value_get_bool(&r, path, out);
}

KCTL_API int kctl_json_iter_begin(const kctl_json_value *from, const char *path, kctl_json_iter *it) {
    kctl_json_value v;
    int rc;
    if (!it) return KCTL_ERR_INVALID_ARG;
    memset(it, 0, sizeof *it);
    if ((rc = kctl_json_value_get(from, path, &v)) != KCTL_OK) return rc;
    if (v.type != KCTL_JSON_OBJECT && v.type != KCTL_JSON_ARRAY) return KCTL_ERR_INVALID_ARG;
    it->text_ = v.text;
    it->len_ = (uint32_t)v.len;
    it->pos_ = 1; /* after the bracket */
    it->type_ = (uint8_t)v.type;
    return KCTL_OK;
}

KCTL_API bool kctl_json_iter_next(kctl_json_iter *it, kctl_json_value *name, kctl_json_value *value) {
    kctl__jparse p;
    uint32_t ns = 0, ne = 0, vs = 0, ve = 0;
    bool esc = false, obj;
    if (name) memset(name, 0, sizeof *name);
    if (value) memset(value, 0, sizeof *value);
    if (!it || !it->text_) return false;
    obj = it->type_ == KCTL_JSON_OBJECT;
    memset(&p, 0, sizeof p);
    p.s = it->text_;
    p.pos = it->pos_;
    p.len = it->len_;
    if (kctl__jitem(&p, obj, &ns, &ne, &esc, &vs, &ve) <= 0) {
        memset(it, 0, sizeof *it); /* the end (or not JSON): stays at the end */
        return false;
    }
    if (name && obj) kctl__jview(it->text_, ns - 1, ne + 1, name);
    if (value) kctl__jview(it->text_, vs, ve, value);
    it->pos_ = p.pos;
    return true;
}

/* ---------------------------------------------------------- >>obj OBJECTS */
/* One block: this struct; what a non-default allocator and a codec need
   (only when there is one); the owner refs; the label, annotation and
   finalizer string offsets; the key (right there, so a lookup by key reads
   the struct's cache lines), the document right after it; the other
   strings. */
struct kctl_obj {
    kctl__node node;                /* the key, its length and hash: maps hold the object itself */
    unsigned refs;
    uint32_t len_ext;               /* the document's length (< 1 GiB), and KCTL__OBJ_* << 30 */
    uint32_t str[4];                /* offsets of KCTL__OBJ_NS...; 0: absent (the name is the key's tail) */
    uint16_t nlabels, nannotations, nfinalizers, nowners;
    int64_t generation;
};
enum { KCTL__OBJ_NS, KCTL__OBJ_UID, KCTL__OBJ_RV, KCTL__OBJ_DEL }; /* kctl_obj.str[], kctl__oview.str[] */
#define KCTL__OBJ_ALLOC 1u /* a kctl__objalloc follows the struct */
#define KCTL__OBJ_CODEC 2u /* then a kctl__objcodec */
#ifdef KCTL_NO_CODEC /* no codec: options with one are UNSUPPORTED, no object has one */
#define KCTL__OBJ_CODECS 0
#else
#define KCTL__OBJ_CODECS 1
#endif
#define KCTL__OBJ_LEN_MAX 0x3fffffffu
#define KCTL__OBJ_EXT(o) ((o)->len_ext >> 30)
#define KCTL__OBJ_DOC(o) ((o)->node.key + (o)->node.len + 1)
#define KCTL__OBJ_COUNT_MAX 65535u /* labels, annotations, finalizers, owner refs: more is TOO_LARGE */
typedef struct kctl__objalloc {
    void (*free_fn)(void *ptr, void *user_data);
    void *user_data;
    void *(*alloc_fn)(size_t size, void *user_data); /* for scratch that works on the object (kctl__obj_allocator) */
} kctl__objalloc;
typedef struct kctl__objcodec {
    void (*release)(void *decoded, void *user_data);
    void *user_data;
    void *decoded;
} kctl__objcodec;

/* The metadata while it is read, as pointers. */
typedef struct kctl__oview {
    const char *key, *str[4]; /* by KCTL__OBJ_NS... */
    int64_t generation;
    size_t nlabels, nannotations, nfinalizers, nowners;
    uint32_t *labels;      /* offsets: key, value, key, value, ... */
    uint32_t *annotations; /* likewise */
    uint32_t *finalizers;
    kctl_owner_ref *owners;
} kctl__oview;

#define KCTL__OBJ_HEAD ((sizeof(kctl_obj) + 7) & ~(size_t)7)
static size_t kctl__obj_extsz(uint32_t ext) {
    return (ext & KCTL__OBJ_ALLOC ? sizeof(kctl__objalloc) : 0) + (ext & KCTL__OBJ_CODEC ? sizeof(kctl__objcodec) : 0);
}
static kctl__objalloc *kctl__obj_alloc_of(const kctl_obj *o) {
    return (kctl__objalloc *)(void *)((char *)(uintptr_t)o + KCTL__OBJ_HEAD);
}
/* The allocator o was made with (zero: the defaults), for scratch memory
   a call that works on o needs. */
static kctl_allocator kctl__obj_allocator(const kctl_obj *o) {
    kctl_allocator a;
    memset(&a, 0, sizeof a);
    if (o && (KCTL__OBJ_EXT(o) & KCTL__OBJ_ALLOC)) {
        a.alloc_fn = kctl__obj_alloc_of(o)->alloc_fn;
        a.free_fn = kctl__obj_alloc_of(o)->free_fn;
        a.user_data = kctl__obj_alloc_of(o)->user_data;
    }
    return a;
}
static kctl__objcodec *kctl__obj_codec_of(const kctl_obj *o) {
    return (kctl__objcodec *)(void *)((char *)(uintptr_t)o + KCTL__OBJ_HEAD + kctl__obj_extsz(KCTL__OBJ_EXT(o) & KCTL__OBJ_ALLOC));
}
static kctl_owner_ref *kctl__obj_owners(const kctl_obj *o) {
    return (kctl_owner_ref *)(void *)((char *)(uintptr_t)o + KCTL__OBJ_HEAD + kctl__obj_extsz(KCTL__OBJ_EXT(o)));
}
static uint32_t *kctl__obj_labels(const kctl_obj *o) { return (uint32_t *)(void *)(kctl__obj_owners(o) + o->nowners); }
static KCTL__SMALL_INLINE32 uint32_t *kctl__obj_annotations(const kctl_obj *o) { return kctl__obj_labels(o) + 2 * (size_t)o->nlabels; }
static uint32_t *kctl__obj_finalizers(const kctl_obj *o) { return kctl__obj_annotations(o) + 2 * (size_t)o->nannotations; }
/* Past KCTL__JSON_SCAN_MAX labels, annotations or finalizers, a lookup
   binary-searches an index that follows the finalizers: their numbers in
   the order of their names (strcmp). Smaller objects have none (no bytes
   added: most objects), and scan. */
#define KCTL__OBJ_INDEXED(n) ((n) > KCTL__JSON_SCAN_MAX ? (size_t)(n) : 0)
static uint32_t *kctl__obj_label_index(const kctl_obj *o) { return kctl__obj_finalizers(o) + o->nfinalizers; }
static uint32_t *kctl__obj_annotation_index(const kctl_obj *o) { return kctl__obj_label_index(o) + KCTL__OBJ_INDEXED(o->nlabels); }
static KCTL__UNUSED uint32_t *kctl__obj_finalizer_index(const kctl_obj *o) { /* (the default build's obj build) */
    return kctl__obj_annotation_index(o) + KCTL__OBJ_INDEXED(o->nannotations);
}
/* o's list which (0 labels, 1 annotations: pairs of offsets; 2
   finalizers): its offsets, their count in *n, and where its lookup index
   would be in *index (kctl__obj_find reads it only if the list has one).
   One walk of the layout for the lookups by name and the obj build. */
static uint32_t *kctl__obj_list(const kctl_obj *o, unsigned which, size_t *n, uint32_t **index) {
    uint32_t *p = kctl__obj_labels(o);
    size_t c[3];
    unsigned k;
    c[0] = o->nlabels;
    c[1] = o->nannotations;
    c[2] = o->nfinalizers;
    *index = p + 2 * c[0] + 2 * c[1] + c[2];
    for (k = 0; k < which; k++) {
        p += (k < 2 ? 2 : 1) * c[k];
        *index += KCTL__OBJ_INDEXED(c[k]);
    }
    *n = c[which];
    return p;
}

static const char *kctl__obj_str(const kctl_obj *o, uint32_t off) { return (const char *)o + off; }
static const char *kctl__obj_at(const kctl_obj *o, uint32_t off, const char *absent) {
    return off ? (const char *)o + off : absent;
}
static KCTL__SMALL_CALL uint32_t kctl__obj_off(const kctl_obj *o, size_t total, const char *p) {
    uintptr_t b = (uintptr_t)o, q = (uintptr_t)p;
    return q > b && q < b + total ? (uint32_t)(q - b) : 0; /* "" literals (absent) are not in the block */
}

/* Strings go to one arena: sized in a first pass (arena NULL), written in
   the second. The labels and annotations that count (the last of repeated
   names) are listed once, in the first pass. */
typedef struct kctl__obuild {
    const char *base; /* the object, for offsets */
    size_t gap;       /* left free right after the key (for the document) */
    char *arena;
    size_t used, cap;
    int err;
    const kctl_allocator *allocator;
    kctl__jmview maps[2]; /* labels, annotations */
    bool scanned;         /* md and mv hold the metadata's members (both passes read them) */
    uint32_t md, mv[10];  /* by KCTL__OB_* */
} kctl__obuild;

/* The metadata members an object keeps, found in one walk of the
   metadata (the last of repeated names counts). */
enum { KCTL__OB_NAME, KCTL__OB_NS, KCTL__OB_UID, KCTL__OB_RV, KCTL__OB_DEL, KCTL__OB_GEN, KCTL__OB_LABELS, KCTL__OB_ANN,
       KCTL__OB_FIN, KCTL__OB_OWNERS };
static void kctl__ob_scan(kctl__obuild *b, const kctl_json *j) {
    static const char *const names[10] = { "name", "namespace", "uid", "resourceVersion", "deletionTimestamp",
                                           "generation", "labels", "annotations", "finalizers", "ownerReferences" };
    static const unsigned char lens[10] = { 4, 9, 3, 15, 17, 10, 6, 11, 10, 15 };
    uint32_t md = kctl_json_member(j, 0, "metadata"), i, m, k;
    b->scanned = true;
    b->md = md;
    for (k = 0; k < 10; k++) b->mv[k] = KCTL_JSON_NONE;
    if (kctl_json_type_of(j, md) != KCTL_JSON_OBJECT) return;
#if KCTL_SMALL /* a lookup a name: the same members found, in more walks */
    (void)i;
    (void)m;
    for (k = 0; k < 10; k++) b->mv[k] = kctl__jmember_n(j, md, names[k], lens[k]);
#else
    for (i = md + 1, m = 0; m < j->toks[md].size; m++, i += 1 + j->toks[i + 1].skip) {
        uint32_t n = j->toks[i].end - j->toks[i].start;
        if (!j->toks[i].escaped && (n > 17 || !(UINT32_C(0x28e58) >> n & 1))) continue; /* no name of that length */
        for (k = 0; k < 10; k++)
            if ((j->toks[i].escaped || n == lens[k]) && kctl__jkey_eq(j, &j->toks[i], names[k], lens[k])) {
                b->mv[k] = i + 1; /* (unescaped: the length decides most) */
                break;
            }
    }
#endif
}

/* Whether v is of type want; else, unless absent or null, PROTO. */
static bool kctl__ob_is(kctl__obuild *b, const kctl_json *j, uint32_t v, kctl_json_type want) {
    kctl_json_type t = kctl_json_type_of(j, v);
    if (t == want) return true;
    if (t != KCTL_JSON_INVALID && t != KCTL_JSON_NULL) b->err = KCTL_ERR_PROTO;
    return false;
}

/* The string at v, unescaped, then the byte end; v must be a string (else
   PROTO). The first pass counts its raw length (what it unescapes to is
   no longer). */
#if KCTL_SMALL
#define KCTL__OB_INLINE
#else
#define KCTL__OB_INLINE inline
#endif
static KCTL__OB_INLINE const char *kctl__ob_copy(kctl__obuild *b, const kctl_json *j, uint32_t v, char end) {
    char *d = b->arena ? b->arena + b->used : NULL;
    size_t n;
    if (kctl_json_type_of(j, v) != KCTL_JSON_STRING) {
        b->err = KCTL_ERR_PROTO;
        return "";
    }
    n = j->toks[v].end - j->toks[v].start;
    if (d) {
        if (!j->toks[v].escaped) { /* as it stands (a parsed string holds no NUL but by an escape) */
            kctl__memcpy(d, j->text + j->toks[v].start, n);
        } else {
            kctl_json_string(j, v, d, b->cap - b->used, &n);
            if (kctl__memchr(d, '\0', n)) b->err = KCTL_ERR_PROTO; /* a NUL inside: no metadata has one */
        }
        d[n] = end;
    }
    b->used += n + 1;
    return d ? d : "";
}
static const char *kctl__ob_str(kctl__obuild *b, const kctl_json *j, uint32_t v) { return kctl__ob_copy(b, j, v, '\0'); }

/* An optional string value v: absent or null gives dflt. */
static KCTL__SMALL_CALL32 const char *kctl__ob_optv(kctl__obuild *b, const kctl_json *j, uint32_t v, const char *dflt) {
    return kctl__ob_is(b, j, v, KCTL_JSON_STRING) ? kctl__ob_str(b, j, v) : dflt;
}

/* Labels (which 0) or annotations (1): a map of strings into pairs[] (when
   given); their count. A repeated name: the last counts. */
static size_t kctl__ob_map(kctl__obuild *b, const kctl_json *j, int which, uint32_t *pairs) {
    kctl__jmview *v = &b->maps[which];
    uint32_t k;
    int rc;
    if (!b->arena) { /* the first pass lists the members */
        uint32_t m = b->mv[which ? KCTL__OB_ANN : KCTL__OB_LABELS];
        if (!kctl__ob_is(b, j, m, KCTL_JSON_OBJECT)) return 0;
        if ((rc = kctl__jmembers(j, m, b->allocator, false, v)) != KCTL_OK) { b->err = rc; return 0; }
    }
    for (k = 0; k < v->n && !b->err; k++) {
        const char *key = kctl__ob_str(b, j, v->keys[k]), *value = kctl__ob_str(b, j, v->keys[k] + 1);
        if (pairs) {
            pairs[2 * k] = (uint32_t)(key - b->base);
            pairs[2 * k + 1] = (uint32_t)(value - b->base);
        }
    }
    return v->n;
}

/* Read the metadata into o (sizes only when b->arena is NULL). */
static void kctl__ob_fill(kctl__oview *o, kctl__obuild *b, const kctl_json *j) {
    static const char *const ref_names[4] = { "apiVersion", "kind", "name", "uid" };
    uint32_t v, i, k, n, a;
    char *key = b->arena ? b->arena + b->used : NULL;
    if (!b->scanned) kctl__ob_scan(b, j);
    v = b->mv[KCTL__OB_NAME];
    if (kctl_json_type_of(j, 0) != KCTL_JSON_OBJECT || kctl_json_type_of(j, b->md) != KCTL_JSON_OBJECT ||
        kctl_json_type_of(j, v) != KCTL_JSON_STRING || j->toks[v].start == j->toks[v].end) {
        b->err = KCTL_ERR_PROTO;
        return;
    }
    /* the key first: namespace/name, or name (an empty namespace: none);
       the name is its tail; the document goes in the gap after it */
    i = b->mv[KCTL__OB_NS];
    if (kctl_json_type_of(j, i) == KCTL_JSON_STRING) {
        kctl__ob_copy(b, j, i, '/');
        if (key && j->toks[i].start == j->toks[i].end) b->used--;
    }
    kctl__ob_copy(b, j, v, '\0');
    b->used += b->gap;
    if (key) o->key = key;
    for (k = 0; k < 4; k++) /* namespace, uid, resourceVersion, deletionTimestamp (NULL when absent) */
        o->str[k] = kctl__ob_optv(b, j, b->mv[KCTL__OB_NS + k], k == KCTL__OBJ_DEL ? NULL : "");
    v = b->mv[KCTL__OB_GEN];
    if (!key && kctl__ob_is(b, j, v, KCTL_JSON_NUMBER) && kctl_json_int64(j, v, &o->generation) != KCTL_OK)
        b->err = KCTL_ERR_PROTO; /* (read in the first pass) */
    o->nlabels = kctl__ob_map(b, j, 0, o->labels);
    o->nannotations = kctl__ob_map(b, j, 1, o->annotations);
    for (a = 0; a < 2; a++) { /* the finalizers (strings), then the owner references (objects) */
        v = b->mv[a ? KCTL__OB_OWNERS : KCTL__OB_FIN];
        n = kctl__ob_is(b, j, v, KCTL_JSON_ARRAY) ? j->toks[v].size : 0;
        if (a) o->nowners = n;
        else o->nfinalizers = n;
        for (i = v + 1, k = 0; k < n; k++, i += j->toks[i].skip) {
            kctl_owner_ref r;
            const char **field[4];
            uint32_t c, f;
            if (!a) {
                const char *fin = kctl__ob_str(b, j, i);
                if (o->finalizers) o->finalizers[k] = (uint32_t)(fin - b->base);
                continue;
            }
            memset(&r, 0, sizeof r);
            field[0] = &r.api_version; field[1] = &r.kind; field[2] = &r.name; field[3] = &r.uid;
            if (kctl_json_type_of(j, i) != KCTL_JSON_OBJECT) { b->err = KCTL_ERR_PROTO; break; }
            for (f = 0; f < 4; f++) *field[f] = kctl__ob_optv(b, j, kctl_json_member(j, i, ref_names[f]), "");
            c = kctl_json_member(j, i, "controller");
            if (kctl_json_type_of(j, c) == KCTL_JSON_TRUE) r.controller = true;
            else if (kctl_json_type_of(j, c) != KCTL_JSON_FALSE) kctl__ob_is(b, j, c, KCTL_JSON_NULL);
            if (o->owners) o->owners[k] = r;
        }
    }
}

static size_t kctl__align8(size_t n) { return (n + 7) & ~(size_t)7; }

/* A lookup index (KCTL__OBJ_INDEXED): the numbers 0..n-1 of the strings at
   offs[0], offs[stride], ... sorted by them, with scratch (n entries). */
typedef struct kctl__obsort {
    const kctl_obj *o;
    const uint32_t *offs;
    uint32_t stride;
} kctl__obsort;
static int kctl__ob_cmp(const void *ctx, uint32_t a, uint32_t b) {
    const kctl__obsort *c = (const kctl__obsort *)ctx;
    int r = kctl__strcmp(kctl__obj_str(c->o, c->offs[(size_t)c->stride * a]), kctl__obj_str(c->o, c->offs[(size_t)c->stride * b]));
    KCTL__JWORK();
    return r ? r : (a > b) - (a < b);
}
static void kctl__ob_index(const kctl_obj *o, const uint32_t *offs, uint32_t stride, uint32_t n, uint32_t *index, uint32_t *scratch) {
    kctl__obsort c;
    uint32_t i;
    if (!KCTL__OBJ_INDEXED(n)) return;
    for (i = 0; i < n; i++) index[i] = i;
    c.o = o;
    c.offs = offs;
    c.stride = stride;
    kctl__sort_u32(index, scratch, n, kctl__ob_cmp, &c);
}

static int kctl__obj_build(const char *json, size_t len, const kctl_obj_opts *opts, kctl_json_tok *toks, const kctl_json *jp,
                           kctl_obj **out);

KCTL_API int kctl_obj_parse(const char *json, size_t len, const kctl_obj_opts *opts, kctl_obj **out) {
    kctl_obj_opts op;
    kctl_json j;
    kctl_json_tok *toks;
    int rc;
    if (!out) return KCTL_ERR_INVALID_ARG;
    *out = NULL;
    if (!json) return KCTL_ERR_INVALID_ARG;
    if (len == KCTL_NTS) len = kctl__strlen(json);
    memset(&op, 0, sizeof op);
    if (opts) op = *opts;
    if ((!op.allocator.alloc_fn) != (!op.allocator.free_fn)) return KCTL_ERR_INVALID_ARG;
    rc = kctl_json_parse(json, len, NULL, 0, &op.limits, &j);
    if (rc != KCTL_OK) return rc;
    toks = (kctl_json_tok *)kctl__alloc(&op.allocator, (size_t)j.ntoks * sizeof *toks);
    if (!toks) return KCTL_ERR_NOMEM;
    kctl_json_parse(json, len, toks, j.ntoks, &op.limits, &j);
    rc = kctl__obj_build(json, len, &op, toks, &j, out);
    kctl__free(&op.allocator, toks);
    return rc;
}

/* The object of json[0..len), whose tokens toks (j) the caller has parsed
   already (with opts' limits); toks are used as scratch (the caller frees
   them after). What kctl_obj_parse returns past the parse; out, json and
   opts are there and len is the length (both callers: kctl_obj_parse
   checked them, and the memstore's write passes its document). */
static int kctl__obj_build(const char *json, size_t len, const kctl_obj_opts *opts, kctl_json_tok *toks, const kctl_json *jp,
                           kctl_obj **out) {
    const kctl_obj_opts *op = opts; /* (both callers pass theirs) */
    kctl_json j = *jp;
    kctl__oview v;
    kctl_obj *o = NULL;
    kctl__obuild b;
    size_t head, ptrs, total;
    uint32_t ext = 0, *scratch, k;
    char *block;
    int rc; /* (*out: NULL already, set only once it is made) */
    if ((!op->allocator.alloc_fn) != (!op->allocator.free_fn)) return KCTL_ERR_INVALID_ARG;
    if (!KCTL__OBJ_CODECS && op->codec.decode) return KCTL_ERR_UNSUPPORTED; /* a part compiled out (KCTL_NO_CODEC) */

    /* first pass: sizes (the strings' raw lengths: room enough) and validation */
    memset(&v, 0, sizeof v);
    memset(&b, 0, sizeof b);
    b.allocator = &op->allocator;
    kctl__ob_fill(&v, &b, &j);
    if (!b.err && (v.nlabels | v.nannotations | v.nfinalizers | v.nowners) > KCTL__OBJ_COUNT_MAX) /* (65535 is 2^16 - 1: the OR is above it when one is) */
        b.err = KCTL_ERR_TOO_LARGE;
    if ((rc = b.err) != KCTL_OK) goto out;
    if (op->allocator.free_fn || op->allocator.user_data) ext |= KCTL__OBJ_ALLOC;
    if (KCTL__OBJ_CODECS && op->codec.decode) ext |= KCTL__OBJ_CODEC;
    head = KCTL__OBJ_HEAD + kctl__obj_extsz(ext);
    ptrs = v.nowners * sizeof(kctl_owner_ref) +
           (2 * v.nlabels + 2 * v.nannotations + v.nfinalizers + KCTL__OBJ_INDEXED(v.nlabels) +
            KCTL__OBJ_INDEXED(v.nannotations) + KCTL__OBJ_INDEXED(v.nfinalizers)) * sizeof(uint32_t);
    total = head + ptrs + b.used + len + 1;
    if (total > UINT32_MAX || len > KCTL__OBJ_LEN_MAX) { /* offsets are 32 bits */
        rc = KCTL_ERR_TOO_LARGE;
        goto out;
    }
    block = (char *)kctl__alloc(&op->allocator, total);
    if (!block) {
        rc = KCTL_ERR_NOMEM;
        goto out;
    }
    /* second pass: write it all into one block */
    o = (kctl_obj *)(void *)block;
    memset(o, 0, head);
    o->len_ext = (uint32_t)len | ext << 30;
    o->nowners = (uint16_t)v.nowners;
    o->nlabels = (uint16_t)v.nlabels;
    o->nannotations = (uint16_t)v.nannotations;
    o->nfinalizers = (uint16_t)v.nfinalizers;
    v.owners = kctl__obj_owners(o);
    v.labels = kctl__obj_labels(o);
    v.annotations = kctl__obj_annotations(o);
    v.finalizers = kctl__obj_finalizers(o);
    b.base = block;
    b.gap = len + 1;
    b.arena = block + head + ptrs;
    b.used = 0;
    b.cap = total - (head + ptrs);
    kctl__ob_fill(&v, &b, &j);
    if ((rc = b.err) != KCTL_OK) {
        kctl__free(&op->allocator, block);
        o = NULL;
        goto out;
    }
    scratch = (uint32_t *)(void *)toks; /* the tokens are done with: 2 or more a label or finalizer */
#if KCTL_SMALL /* labels, annotations and finalizers in one loop, as the lookups find them */
    for (k = 0; k < 3; k++) {
        size_t n;
        uint32_t *index, *offs = kctl__obj_list(o, k, &n, &index);
        kctl__ob_index(o, offs, k < 2 ? 2 : 1, (uint32_t)n, index, scratch);
    }
#else
    kctl__ob_index(o, kctl__obj_labels(o), 2, o->nlabels, kctl__obj_label_index(o), scratch);
    kctl__ob_index(o, kctl__obj_annotations(o), 2, o->nannotations, kctl__obj_annotation_index(o), scratch);
    kctl__ob_index(o, kctl__obj_finalizers(o), 1, o->nfinalizers, kctl__obj_finalizer_index(o), scratch);
#endif
    o->refs = 1;
    o->node.key = v.key;
    o->node.len = (uint32_t)kctl__strlen(v.key);
    o->node.hash = kctl__hash(v.key, o->node.len);
    kctl__memcpy(block + (KCTL__OBJ_DOC(o) - block), json, len); /* into the gap after the key */
    block[KCTL__OBJ_DOC(o) - block + len] = '\0';
    for (k = 0; k < 4; k++) o->str[k] = kctl__obj_off(o, total, v.str[k]);
    o->generation = v.generation;
    if (ext & KCTL__OBJ_ALLOC) {
        kctl__obj_alloc_of(o)->free_fn = op->allocator.free_fn;
        kctl__obj_alloc_of(o)->user_data = op->allocator.user_data;
        kctl__obj_alloc_of(o)->alloc_fn = op->allocator.alloc_fn;
    }
out:
    kctl__jmembers_free(&b.maps[0]);
    kctl__jmembers_free(&b.maps[1]);
    if (rc != KCTL_OK) return rc;
    if (KCTL__OBJ_CODECS && (ext & KCTL__OBJ_CODEC)) {
        kctl__objcodec *c = kctl__obj_codec_of(o);
        c->release = op->codec.release;
        c->user_data = op->codec.user_data;
        rc = op->codec.decode(o, &c->decoded, op->codec.user_data);
        if (rc != KCTL_OK) {
            c->release = NULL; /* nothing was decoded */
            kctl_obj_unref(o);
            return rc < 0 ? rc : KCTL_ERR_PROTO;
        }
    }
    *out = o;
    return KCTL_OK;
}

KCTL_API kctl_obj *kctl_obj_ref(kctl_obj *o) {
    if (!o) return NULL;
    (void)KCTL__ATOMIC_INC(&o->refs);
    return o;
}

KCTL_API void kctl_obj_unref(kctl_obj *o) {
    unsigned left;
    if (!o) return;
    left = KCTL__ATOMIC_DEC(&o->refs);
    if (left) return;
    if (KCTL__OBJ_CODECS && (KCTL__OBJ_EXT(o) & KCTL__OBJ_CODEC)) {
        kctl__objcodec *c = kctl__obj_codec_of(o);
        if (c->release && c->decoded) c->release(c->decoded, c->user_data);
    }
    if (!(KCTL__OBJ_EXT(o) & KCTL__OBJ_ALLOC)) KCTL_FREE(o, NULL);
    else if (kctl__obj_alloc_of(o)->free_fn) kctl__obj_alloc_of(o)->free_fn(o, kctl__obj_alloc_of(o)->user_data);
    else KCTL_FREE(o, kctl__obj_alloc_of(o)->user_data);
}

KCTL_API const char *kctl_obj_key(const kctl_obj *o) { return o ? o->node.key : ""; }
KCTL_API const char *kctl_obj_namespace(const kctl_obj *o) { return o ? kctl__obj_at(o, o->str[KCTL__OBJ_NS], "") : ""; }
KCTL_API const char *kctl_obj_name(const kctl_obj *o) {
    size_t n;
    if (!o) return "";
    n = o->str[KCTL__OBJ_NS] ? kctl__strlen(kctl__obj_str(o, o->str[KCTL__OBJ_NS])) : 0; /* the key is namespace/name, or name */
    return o->node.key + (n ? n + 1 : 0);
}
KCTL_API const char *kctl_obj_uid(const kctl_obj *o) { return o ? kctl__obj_at(o, o->str[KCTL__OBJ_UID], "") : ""; }
KCTL_API const char *kctl_obj_resource_version(const kctl_obj *o) { return o ? kctl__obj_at(o, o->str[KCTL__OBJ_RV], "") : ""; }
KCTL_API int64_t kctl_obj_generation(const kctl_obj *o) { return o ? o->generation : 0; }
KCTL_API const char *kctl_obj_deletion_timestamp(const kctl_obj *o) { return o ? kctl__obj_at(o, o->str[KCTL__OBJ_DEL], NULL) : NULL; }
KCTL_API size_t kctl_obj_label_count(const kctl_obj *o) { return o ? o->nlabels : 0; }
KCTL_API size_t kctl_obj_finalizer_count(const kctl_obj *o) { return o ? o->nfinalizers : 0; }
KCTL_API size_t kctl_obj_owner_count(const kctl_obj *o) { return o ? o->nowners : 0; }
KCTL_API void *kctl_obj_decoded(const kctl_obj *o) {
    return KCTL__OBJ_CODECS && o && (KCTL__OBJ_EXT(o) & KCTL__OBJ_CODEC) ? kctl__obj_codec_of(o)->decoded : NULL;
}

/* Copy text[0..n) into buf[0..cap) NUL-terminated; false when it does not fit. */
static bool kctl__key_part(char *buf, size_t cap, const char *text, size_t n) {
    if (!buf) return true; /* not wanted */
    if (n >= cap) return false;
    kctl__memcpy(buf, text, n);
    buf[n] = '\0';
    return true;
}

KCTL_API int kctl_key_split(const char *key, char *ns, size_t ns_cap, char *name, size_t name_cap) {
    const char *slash;
    int rc = KCTL_OK;
    if ((!ns && ns_cap) || (!name && name_cap)) return KCTL_ERR_INVALID_ARG;
    if (ns && ns_cap) ns[0] = '\0';
    if (name && name_cap) name[0] = '\0';
    if (!key) return KCTL_ERR_INVALID_ARG;
    slash = kctl__strchr(key, '/');
    if (slash && kctl__strchr(slash + 1, '/')) return KCTL_ERR_INVALID_ARG;
    if (!slash) {
        if (!kctl__key_part(ns, ns_cap, "", 0) || !kctl__key_part(name, name_cap, key, kctl__strlen(key))) rc = KCTL_ERR_TOO_LARGE;
    } else if (!kctl__key_part(ns, ns_cap, key, (size_t)(slash - key)) ||
               !kctl__key_part(name, name_cap, slash + 1, kctl__strlen(slash + 1))) {
        rc = KCTL_ERR_TOO_LARGE;
    }
    if (rc != KCTL_OK) {
        if (ns && ns_cap) ns[0] = '\0';
        if (name && name_cap) name[0] = '\0';
    }
    return rc;
}

KCTL_API bool kctl_obj_resource_version_u64(const kctl_obj *o, uint64_t *out) {
    const char *p;
    uint64_t x = 0;
    if (!o || !o->str[KCTL__OBJ_RV] || !*((const char *)o + o->str[KCTL__OBJ_RV])) return false;
    for (p = (const char *)o + o->str[KCTL__OBJ_RV]; *p; p++) /* at most 20 digits, no overflow */
        if (!kctl__jdigit(*p) || x > (UINT64_MAX - (uint64_t)(*p - '0')) / 10) return false;
        else x = x * 10 + (uint64_t)(*p - '0');
    if (out) *out = x;
    return true;
}

/* Entry key of the n strings at offs[0], offs[stride], ... (index: their
   lookup index, if they have one): its number, or n. */
static KCTL__SMALL_CALL32 size_t kctl__obj_find(const kctl_obj *o, const uint32_t *offs, size_t stride, size_t n, const uint32_t *index,
                             const char *key) {
    size_t i, lo = 0, hi = n;
    if (!key) return n;
    if (!KCTL__OBJ_INDEXED(n)) {
        for (i = 0; i < n; i++) {
            KCTL__JWORK();
            if (kctl__strcmp(kctl__obj_str(o, offs[stride * i]), key) == 0) return i;
        }
        return n;
    }
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        int r = kctl__strcmp(kctl__obj_str(o, offs[stride * index[mid]]), key);
        KCTL__JWORK();
        if (r == 0) return index[mid];
        if (r < 0) lo = mid + 1;
        else hi = mid;
    }
    return n;
}

/* Entry key of list which of o (not NULL): its number, or *n. */
static size_t kctl__obj_lookup(const kctl_obj *o, unsigned which, const char *key, const uint32_t **offs, size_t *n) {
    uint32_t *index;
    *offs = kctl__obj_list(o, which, n, &index);
    return kctl__obj_find(o, *offs, which < 2 ? 2 : 1, *n, index, key);
}

/* The value of label or annotation (which 0, 1) key; NULL. */
static const char *kctl__obj_value(const kctl_obj *o, unsigned which, const char *key) {
    const uint32_t *offs;
    size_t n, i;
    if (!o) return NULL;
    i = kctl__obj_lookup(o, which, key, &offs, &n);
    return i < n ? kctl__obj_str(o, offs[2 * i + 1]) : NULL;
}

KCTL_API const char *kctl_obj_label(const kctl_obj *o, const char *key) { return kctl__obj_value(o, 0, key); }

KCTL_API bool kctl_obj_label_at(const kctl_obj *o, size_t i, const char **key, const char **value) {
    if (!o || i >= o->nlabels) return false;
    if (key) *key = kctl__obj_str(o, kctl__obj_labels(o)[2 * i]);
    if (value) *value = kctl__obj_str(o, kctl__obj_labels(o)[2 * i + 1]);
    return true;
}

KCTL_API const char *kctl_obj_annotation(const kctl_obj *o, const char *key) { return kctl__obj_value(o, 1, key); }

KCTL_API size_t kctl_obj_annotation_count(const kctl_obj *o) { return o ? o->nannotations : 0; }

KCTL_API bool kctl_obj_annotation_at(const kctl_obj *o, size_t i, const char **key, const char **value) {
    if (!o || i >= o->nannotations) return false;
    if (key) *key = kctl__obj_str(o, kctl__obj_annotations(o)[2 * i]);
    if (value) *value = kctl__obj_str(o, kctl__obj_annotations(o)[2 * i + 1]);
    return true;
}

KCTL_API const char *kctl_obj_finalizer(const kctl_obj *o, size_t i) {
    return o && i < o->nfinalizers ? kctl__obj_str(o, kctl__obj_finalizers(o)[i]) : NULL;
}

KCTL_API bool kctl_obj_has_finalizer(const kctl_obj *o, const char *name) {
    const uint32_t *offs;
    size_t n;
    return o && kctl__obj_lookup(o, 2, name, &offs, &n) < n;
}

KCTL_API const kctl_owner_ref *kctl_obj_owner(const kctl_obj *o, size_t i) {
    return o && i < o->nowners ? &kctl__obj_owners(o)[i] : NULL;
}

KCTL_API const kctl_owner_ref *kctl_obj_controller_ref(const kctl_obj *o) {
    size_t i;
    for (i = 0; o && i < o->nowners; i++)
        if (kctl__obj_owners(o)[i].controller) return &kctl__obj_owners(o)[i];
    return NULL;
}

KCTL_API const char *kctl_obj_json(const kctl_obj *o, size_t *len) {
    if (len) *len = o ? o->len_ext & KCTL__OBJ_LEN_MAX : 0;
    return o ? KCTL__OBJ_DOC(o) : NULL;
}

/* The document as a value (validated when the object was made). */
static int kctl__obj_root(const kctl_obj *o, kctl_json_value *r) {
    if (!o) {
        memset(r, 0, sizeof *r);
        return KCTL_ERR_INVALID_ARG;
    }
    return kctl__jtrim(KCTL__OBJ_DOC(o), o->len_ext & KCTL__OBJ_LEN_MAX, r); /* (validated when o was made) */
}

KCTL_API int kctl_obj_get(const kctl_obj *o, const char *path, kctl_json_value *out) {
    kctl_json_value r;
    int rc = kctl__obj_root(o, &r);
    if (rc != KCTL_OK) {
        if (out) memset(out, 0, sizeof *out);
        return rc;
    }
    return kctl_json_value_get(&r, path, out);
}

KCTL_API int kctl_obj_get_string(const kctl_obj *o, const char *path, char *buf, size_t cap, size_t *len) {
    kctl_json_value r;
    int rc = kctl__obj_root(o, &r);
    if (rc != KCTL_OK) {
        if (len) *len = 0;
        return rc;
    }
    return kctl_json_value_get_string(&r, path, buf, cap, len);
}

KCTL_API int kctl_obj_get_int64(const kctl_obj *o, const char *path, int64_t *out) {
    kctl_json_value r;
    int rc = kctl__obj_root(o, &r);
    return rc != KCTL_OK ? rc : kctl_json_value_get_int64(&r, path, out);
}

KCTL_API int kctl_obj_get_uint64(const kctl_obj *o, const char *path, uint64_t *out) {
    kctl_json_value r;
    int rc = kctl__obj_root(o, &r);
    return rc != KCTL_OK ? rc : kctl_json_value_get_uint64(&r, path, out);
}

KCTL_API int kctl_obj_get_double(const kctl_obj *o, const char *path, double *out) {
    kctl_json_value r;
    int rc = kctl__obj_root(o, &r);
    return rc != KCTL_OK ? rc : kctl_json_value_get_double(&r, path, out);
}

KCTL_API int kctl_obj_get_bool(const kctl_obj *o, const char *path, bool *out) {
    kctl_json_value r;
    int rc = kctl__obj_root(o, &r);
    return rc != KCTL_OK ? rc : kctl_json_value_get_bool(&r, path, out);
}

KCTL_API int kctl_obj_iter_begin(const kctl_obj *o, const char *path, kctl_json_iter *it) {
    kctl_json_value r;
    int rc = kctl__obj_root(o, &r);
    if (rc != KCTL_OK) {
        if (it) memset(it, 0, sizeof *it);
        return rc;
    }
    return kctl_json_iter_begin(&r, path, it);
}

/* --------------------------------------------------- >>selector SELECTORS */
/* Labels follow apimachinery's labels.Parse step by step: a lexer (words
   run to whitespace or one of =!(),<>; "==" and "!=" are the only
   two-symbol tokens) and its parser with one token of lookahead, where
   "in" and "notin" are operators only in the operator position. Fields
   follow fields.ParseSelector: terms split at unescaped commas, each at
   its first "!=", "==" or "=", the value unescaped. A selector is one
   block: a sizing pass counts, a filling pass writes. */
enum {
    KCTL__SEL_EQ, KCTL__SEL_NE, KCTL__SEL_IN, KCTL__SEL_NOTIN, KCTL__SEL_EXISTS, KCTL__SEL_ABSENT,
    KCTL__SEL_GT, KCTL__SEL_LT, KCTL__SEL_NAME_EQ, KCTL__SEL_NAME_NE, KCTL__SEL_NS_EQ, KCTL__SEL_NS_NE
};

typedef struct kctl__selreq {
    int op;
    const char *key;     /* NULL for a field */
    const char **values;
    size_t nvalues;
    int64_t bound;       /* GT, LT */
} kctl__selreq;

struct kctl_selector {
    kctl_allocator allocator;
    size_t n;
    kctl__selreq *reqs;
};

/* ---- Kubernetes names (apimachinery's validation): the selectors check
   label keys and values with them, the API-server rules every name. */
#if !defined(KCTL_NO_SELECTORS) || !defined(KCTL_NO_VALIDATION)
static bool kctl__name_alnum(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9'); }
static bool kctl__name_lower(char c) { return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9'); }

/* An RFC 1123 label, any length: [a-z0-9]([-a-z0-9]*[a-z0-9])? */
static bool kctl__name_dns_label(const char *s, size_t n) {
    size_t i;
    if (n == 0 || !kctl__name_lower(s[0]) || !kctl__name_lower(s[n - 1])) return false;
    for (i = 1; i + 1 < n; i++)
        if (!kctl__name_lower(s[i]) && s[i] != '-') return false;
    return true;
}

/* An RFC 1123 subdomain, any length: labels joined by dots. */
static bool kctl__name_dns_subdomain(const char *s, size_t n) {
    size_t i, start = 0;
    for (i = 0; i <= n; i++) {
        if (i == n || s[i] == '.') {
            if (!kctl__name_dns_label(s + start, i - start)) return false;
            start = i + 1;
        }
    }
    return true;
}

/* A qualified name's name part (and a label value), any length:
   ([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9] */
static bool kctl__name_qpart(const char *s, size_t n) {
    size_t i;
    if (n == 0 || !kctl__name_alnum(s[0]) || !kctl__name_alnum(s[n - 1])) return false;
    for (i = 1; i + 1 < n; i++)
        if (!kctl__name_alnum(s[i]) && s[i] != '-' && s[i] != '_' && s[i] != '.') return false;
    return true;
}
#endif

#ifndef KCTL_NO_SELECTORS
/* A label name or value: at most 63 of [A-Za-z0-9-_.], alphanumeric at
   both ends; a value may be empty. */
static bool kctl__sel_name_ok(const char *s, size_t n, bool empty_ok) {
    if (n == 0) return empty_ok;
    return n <= 63 && kctl__name_qpart(s, n);
}

/* A label key: [DNS-1123 subdomain of at most 253 characters '/'] name. */
static bool kctl__sel_key_ok(const char *s, size_t n) {
    const char *slash = (const char *)kctl__memchr(s, '/', n);
    size_t p;
    if (!slash) return kctl__sel_name_ok(s, n, false);
    p = (size_t)(slash - s);
    return p <= 253 && kctl__name_dns_subdomain(s, p) && kctl__sel_name_ok(slash + 1, n - p - 1, false);
}

/* s[0..n) as strconv.ParseInt(s, 10, 64) reads it: an optional sign,
   one or more digits, within int64. */
static bool kctl__sel_int(const char *s, size_t n, int64_t *out) {
    size_t i = 0;
    bool neg = false;
    uint64_t x = 0, lim;
    if (n && (s[0] == '+' || s[0] == '-')) { neg = s[0] == '-'; i = 1; }
    if (i == n) return false;
    lim = neg ? (uint64_t)INT64_MAX + 1 : (uint64_t)INT64_MAX;
    for (; i < n; i++) {
        uint64_t d = (uint64_t)(s[i] - '0');
        if (s[i] < '0' || s[i] > '9' || x > (lim - d) / 10) return false;
        x = x * 10 + d;
    }
    if (!neg) *out = (int64_t)x;
    else *out = x == (uint64_t)INT64_MAX + 1 ? INT64_MIN : -(int64_t)x;
    return true;
}

enum {
    KCTL__TK_END, KCTL__TK_WORD, KCTL__TK_IN, KCTL__TK_NOTIN, KCTL__TK_NOT, KCTL__TK_EQ, KCTL__TK_DEQ,
    KCTL__TK_NE, KCTL__TK_GT, KCTL__TK_LT, KCTL__TK_OPEN, KCTL__TK_CLOSE, KCTL__TK_COMMA
};

typedef struct kctl__seltok {
    int t;
    const char *s;
    size_t n;
} kctl__seltok;

static bool kctl__sel_space(char c) { return c == ' ' || c == '\t' || c == '\r' || c == '\n'; }
static bool kctl__sel_symbol(char c) {
    return c == '=' || c == '!' || c == '(' || c == ')' || c == ',' || c == '>' || c == '<';
}

/* The token at *p, whitespace first skipped; *p moves past it. "in" and
   "notin" are operators only where op is true, words elsewhere. */
static kctl__seltok kctl__sel_lex(const char **p, bool op) {
    const char *s = *p;
    kctl__seltok t;
    while (kctl__sel_space(*s)) s++;
    t.s = s;
    t.n = 1;
    switch (*s) {
    case '\0': t.t = KCTL__TK_END; t.n = 0; break;
    case '(': t.t = KCTL__TK_OPEN; break;
    case ')': t.t = KCTL__TK_CLOSE; break;
    case ',': t.t = KCTL__TK_COMMA; break;
    case '>': t.t = KCTL__TK_GT; break;
    case '<': t.t = KCTL__TK_LT; break;
    case '=': if (s[1] == '=') { t.t = KCTL__TK_DEQ; t.n = 2; } else t.t = KCTL__TK_EQ; break;
    case '!': if (s[1] == '=') { t.t = KCTL__TK_NE; t.n = 2; } else t.t = KCTL__TK_NOT; break;
    default:
        for (t.n = 0; s[t.n] && !kctl__sel_space(s[t.n]) && !kctl__sel_symbol(s[t.n]); t.n++) { }
        t.t = KCTL__TK_WORD;
        if (op && t.n == 2 && kctl__memcmp(s, "in", 2) == 0) t.t = KCTL__TK_IN;
        if (op && t.n == 5 && kctl__memcmp(s, "notin", 5) == 0) t.t = KCTL__TK_NOTIN;
        break;
    }
    *p = s + t.n;
    return t;
}

/* The next token's type, *p unmoved (only value positions look ahead). */
static int kctl__sel_peek(const char *p) { return kctl__sel_lex(&p, false).t; }

typedef struct kctl__selp {
    kctl_selector *sel; /* NULL while sizing */
    char *arena;
    const char **vals;
    size_t nreq, nval, bytes;
} kctl__selp;

/* Room for n bytes and a NUL, handed out only in the filling pass. */
static char *kctl__sel_room(kctl__selp *ps, size_t n) {
    char *d = ps->arena;
    ps->bytes += n + 1;
    if (d) ps->arena += n + 1;
    return d;
}

static const char *kctl__sel_str(kctl__selp *ps, const char *s, size_t n) {
    char *d = kctl__sel_room(ps, n);
    if (d) {
        kctl__memcpy(d, s, n);
        d[n] = '\0';
    }
    return d;
}

/* A new requirement; its values follow with kctl__sel_value. */
static kctl__selreq *kctl__sel_req(kctl__selp *ps, int op, const char *key, size_t kn) {
    kctl__selreq *r = ps->sel ? &ps->sel->reqs[ps->nreq] : NULL;
    const char *k = key ? kctl__sel_str(ps, key, kn) : NULL;
    ps->nreq++;
    if (r) {
        memset(r, 0, sizeof *r);
        r->op = op;
        r->key = k;
        r->values = ps->vals + ps->nval;
    }
    return r;
}

static void kctl__sel_value(kctl__selp *ps, kctl__selreq *r, const char *v) {
    if (r) {
        ps->vals[ps->nval] = v;
        r->nvalues++;
    }
    ps->nval++;
}

/* A set's members after "(": words, and "" where labels.Parse reads an
   empty member (a leading ',', ",,", ",)"; its set stores "" once). */
static int kctl__sel_set(kctl__selp *ps, kctl__selreq *r, const char **p) {
    bool any = false, empty = false;
    kctl__seltok t;
    int next = kctl__sel_peek(*p);
    if (next == KCTL__TK_CLOSE) {
        kctl__sel_lex(p, false);
        kctl__sel_value(ps, r, kctl__sel_str(ps, "", 0));
        return KCTL_OK;
    }
    if (next != KCTL__TK_WORD && next != KCTL__TK_COMMA) return KCTL_ERR_INVALID_ARG;
    for (;;) {
        t = kctl__sel_lex(p, false);
        if (t.t == KCTL__TK_WORD) {
            if (!kctl__sel_name_ok(t.s, t.n, true)) return KCTL_ERR_INVALID_ARG;
            kctl__sel_value(ps, r, kctl__sel_str(ps, t.s, t.n));
            any = true;
            next = kctl__sel_peek(*p);
            if (next == KCTL__TK_CLOSE) break;
            if (next != KCTL__TK_COMMA) return KCTL_ERR_INVALID_ARG;
        } else if (t.t == KCTL__TK_COMMA) {
            bool add = !any; /* "(," */
            next = kctl__sel_peek(*p);
            if (next == KCTL__TK_COMMA) kctl__sel_lex(p, false);
            if (next == KCTL__TK_COMMA || next == KCTL__TK_CLOSE) add = true;
            if (add && !empty) kctl__sel_value(ps, r, kctl__sel_str(ps, "", 0));
            any = any || add;
            empty = empty || add;
            if (next == KCTL__TK_CLOSE) break;
        } else {
            return KCTL_ERR_INVALID_ARG;
        }
    }
    kctl__sel_lex(p, false); /* the ')' */
    return KCTL_OK;
}

/* One requirement: [!] key [op value | in/notin (set)]. */
static int kctl__sel_requirement(kctl__selp *ps, const char **p) {
    kctl__seltok key = kctl__sel_lex(p, false), t, v;
    kctl__selreq *r;
    int op, next;
    bool absent = key.t == KCTL__TK_NOT;
    if (absent) key = kctl__sel_lex(p, false);
    if (key.t != KCTL__TK_WORD || !kctl__sel_key_ok(key.s, key.n)) return KCTL_ERR_INVALID_ARG;
    next = kctl__sel_peek(*p);
    if (absent || next == KCTL__TK_END || next == KCTL__TK_COMMA) {
        kctl__sel_req(ps, absent ? KCTL__SEL_ABSENT : KCTL__SEL_EXISTS, key.s, key.n);
        return KCTL_OK; /* after !key the caller wants ',' or the end */
    }
    t = kctl__sel_lex(p, true);
    switch (t.t) {
    case KCTL__TK_IN: op = KCTL__SEL_IN; break;
    case KCTL__TK_NOTIN: op = KCTL__SEL_NOTIN; break;
    case KCTL__TK_EQ: case KCTL__TK_DEQ: op = KCTL__SEL_EQ; break;
    case KCTL__TK_NE: op = KCTL__SEL_NE; break;
    case KCTL__TK_GT: op = KCTL__SEL_GT; break;
    case KCTL__TK_LT: op = KCTL__SEL_LT; break;
    default: return KCTL_ERR_INVALID_ARG;
    }
    r = kctl__sel_req(ps, op, key.s, key.n);
    if (op == KCTL__SEL_IN || op == KCTL__SEL_NOTIN) {
        if (kctl__sel_lex(p, false).t != KCTL__TK_OPEN) return KCTL_ERR_INVALID_ARG;
        return kctl__sel_set(ps, r, p);
    }
    next = kctl__sel_peek(*p); /* "x=" and "x=," hold the empty value */
    if (next == KCTL__TK_END || next == KCTL__TK_COMMA) {
        v.s = *p;
        v.n = 0;
    } else if ((v = kctl__sel_lex(p, false)).t != KCTL__TK_WORD) {
        return KCTL_ERR_INVALID_ARG;
    }
    if (!kctl__sel_name_ok(v.s, v.n, true)) return KCTL_ERR_INVALID_ARG;
    if (op == KCTL__SEL_GT || op == KCTL__SEL_LT) {
        int64_t bound;
        if (!kctl__sel_int(v.s, v.n, &bound)) return KCTL_ERR_INVALID_ARG;
        if (r) r->bound = bound;
    }
    kctl__sel_value(ps, r, kctl__sel_str(ps, v.s, v.n));
    return KCTL_OK;
}

static int kctl__sel_labels(kctl__selp *ps, const char *p) {
    int next, rc;
    if (!p || (next = kctl__sel_peek(p)) == KCTL__TK_END) return KCTL_OK;
    for (;;) {
        kctl__seltok t;
        if (next != KCTL__TK_WORD && next != KCTL__TK_NOT) return KCTL_ERR_INVALID_ARG; /* also after ',' */
        if ((rc = kctl__sel_requirement(ps, &p)) != KCTL_OK) return rc;
        t = kctl__sel_lex(&p, false);
        if (t.t == KCTL__TK_END) return KCTL_OK;
        if (t.t != KCTL__TK_COMMA) return KCTL_ERR_INVALID_ARG;
        next = kctl__sel_peek(p);
    }
}

/* A field value unescaped: "\\", "\," and "\=" stand for the character;
   any other escape, a trailing '\' or a bare '=' is invalid. */
static int kctl__sel_unescape(kctl__selp *ps, kctl__selreq *r, const char *s, size_t n) {
    char *d = kctl__sel_room(ps, n);
    size_t i, k = 0;
    for (i = 0; i < n; i++) {
        char c = s[i];
        if (c == '=') return KCTL_ERR_INVALID_ARG;
        if (c == '\\') {
            c = ++i < n ? s[i] : '\0';
            if (c != '\\' && c != ',' && c != '=') return KCTL_ERR_INVALID_ARG;
        }
        if (d) d[k++] = c;
    }
    if (d) d[k] = '\0';
    kctl__sel_value(ps, r, d);
    return KCTL_OK;
}

static int kctl__sel_fields(kctl__selp *ps, const char *p) {
    while (p && *p) {
        const char *term = p, *end = p, *op;
        size_t fn, on;
        int code, rc;
        for (; *end && *end != ','; end++)
            if (*end == '\\' && end[1]) end++;
        p = *end ? end + 1 : end;
        if (end == term) continue; /* an empty term */
        for (op = term; op < end && *op != '=' && !(op[0] == '!' && op[1] == '='); op++) { }
        if (op == end) return KCTL_ERR_INVALID_ARG;
        fn = (size_t)(op - term);
        on = (op[0] == '!' || op[1] == '=') ? 2 : 1;
        if (fn == 13 && kctl__memcmp(term, "metadata.name", 13) == 0) code = op[0] == '!' ? KCTL__SEL_NAME_NE : KCTL__SEL_NAME_EQ;
        else if (fn == 18 && kctl__memcmp(term, "metadata.namespace", 18) == 0) code = op[0] == '!' ? KCTL__SEL_NS_NE : KCTL__SEL_NS_EQ;
        else return KCTL_ERR_INVALID_ARG;
        rc = kctl__sel_unescape(ps, kctl__sel_req(ps, code, NULL, 0), op + on, (size_t)(end - op - on));
        if (rc != KCTL_OK) return rc;
    }
    return KCTL_OK;
}

KCTL_API int kctl_selector_parse(const char *labels, const char *fields, const kctl_allocator *allocator, kctl_selector **out) {
    kctl__selp ps;
    kctl_allocator a;
    kctl_selector *sel;
    size_t head;
    int rc;
    if (!out) return KCTL_ERR_INVALID_ARG;
    *out = NULL;
    memset(&a, 0, sizeof a);
    if (allocator) a = *allocator;
    if ((!a.alloc_fn) != (!a.free_fn)) return KCTL_ERR_INVALID_ARG;
    memset(&ps, 0, sizeof ps); /* sizing pass */
    if ((rc = kctl__sel_labels(&ps, labels)) != KCTL_OK || (rc = kctl__sel_fields(&ps, fields)) != KCTL_OK) return rc;
    if (ps.nreq > SIZE_MAX / 4 / sizeof(kctl__selreq) || ps.nval > SIZE_MAX / 4 / sizeof(const char *) || ps.bytes > SIZE_MAX / 4)
        return KCTL_ERR_NOMEM;
    head = kctl__align8(sizeof *sel) + ps.nreq * sizeof(kctl__selreq) + ps.nval * sizeof(const char *);
    if (!(sel = (kctl_selector *)kctl__alloc(&a, head + ps.bytes))) return KCTL_ERR_NOMEM;
    memset(sel, 0, sizeof *sel);
    sel->allocator = a;
    sel->n = ps.nreq;
    sel->reqs = (kctl__selreq *)(void *)((char *)sel + kctl__align8(sizeof *sel));
    memset(&ps, 0, sizeof ps); /* filling pass */
    ps.sel = sel;
    ps.vals = (const char **)(void *)(sel->reqs + sel->n);
    ps.arena = (char *)sel + head;
    (void)kctl__sel_labels(&ps, labels);
    (void)kctl__sel_fields(&ps, fields);
    *out = sel;
    return KCTL_OK;
}

KCTL_API bool kctl_selector_matches(const kctl_selector *s, const kctl_obj *obj) {
    size_t i, k;
    if (!s) return true;
    if (!obj) return false;
    for (i = 0; i < s->n; i++) {
        const kctl__selreq *r = &s->reqs[i];
        const char *v = r->key ? kctl_obj_label(obj, r->key) : NULL;
        int64_t n;
        bool hit = false;
        switch (r->op) {
        case KCTL__SEL_EQ: if (!v || kctl__strcmp(v, r->values[0]) != 0) return false; break;
        case KCTL__SEL_NE: if (v && kctl__strcmp(v, r->values[0]) == 0) return false; break;
        case KCTL__SEL_EXISTS: if (!v) return false; break;
        case KCTL__SEL_ABSENT: if (v) return false; break;
        case KCTL__SEL_IN:
        case KCTL__SEL_NOTIN:
            for (k = 0; v && k < r->nvalues && !hit; k++) hit = kctl__strcmp(v, r->values[k]) == 0;
            if (hit != (r->op == KCTL__SEL_IN)) return false;
            break;
        case KCTL__SEL_GT:
        case KCTL__SEL_LT: /* no label, or no integer: no match */
            if (!v || !kctl__sel_int(v, kctl__strlen(v), &n)) return false;
            if (r->op == KCTL__SEL_GT ? n <= r->bound : n >= r->bound) return false;
            break;
        case KCTL__SEL_NAME_EQ: if (kctl__strcmp(kctl_obj_name(obj), r->values[0]) != 0) return false; break;
        case KCTL__SEL_NAME_NE: if (kctl__strcmp(kctl_obj_name(obj), r->values[0]) == 0) return false; break;
        case KCTL__SEL_NS_EQ: if (kctl__strcmp(kctl_obj_namespace(obj), r->values[0]) != 0) return false; break;
        default: if (kctl__strcmp(kctl_obj_namespace(obj), r->values[0]) == 0) return false; break;
        }
    }
    return true;
}
#else /* KCTL_NO_SELECTORS: only the selector that selects everything */
/* labels: whitespace only; fields: commas only (empty terms). */
static bool kctl__sel_empty(const char *p, bool fields) {
    for (; p && *p; p++)
        if (fields ? *p != ',' : (*p != ' ' && *p != '\t' && *p != '\r' && *p != '\n')) return false;
    return true;
}

KCTL_API int kctl_selector_parse(const char *labels, const char *fields, const kctl_allocator *allocator, kctl_selector **out) {
    kctl_allocator a;
    kctl_selector *sel;
    if (!out) return KCTL_ERR_INVALID_ARG;
    *out = NULL;
    memset(&a, 0, sizeof a);
    if (allocator) a = *allocator;
    if ((!a.alloc_fn) != (!a.free_fn)) return KCTL_ERR_INVALID_ARG;
    if (!kctl__sel_empty(labels, false) || !kctl__sel_empty(fields, true)) return KCTL_ERR_UNSUPPORTED;
    if (!(sel = (kctl_selector *)kctl__alloc(&a, kctl__align8(sizeof *sel)))) return KCTL_ERR_NOMEM;
    memset(sel, 0, sizeof *sel);
    sel->allocator = a;
    *out = sel;
    return KCTL_OK;
}

KCTL_API bool kctl_selector_matches(const kctl_selector *s, const kctl_obj *obj) { return !s || obj; }
#endif /* KCTL_NO_SELECTORS */

KCTL_API void kctl_selector_free(kctl_selector *s) {
    if (s) kctl__free(&s->allocator, s);
}

/* ------------------------------------------------------ >>indexer INDEXER */
/* The objects themselves (an object carries its key node) in one map; each
   index maps a value to a bucket, itself a map of the objects with that
   value. A membership is one slot and nothing else: to take an object out
   of its buckets the index functions run on it again (they must give the
   same values for the same object, as client-go requires). An update puts
   the new version into the slots of the old one where the values agree.
   Replace builds a whole new set of maps aside and swaps it in under the
   write lock. */
/* A set of nodes by identity (a bucket's objects): 8-byte slots, linear
   probing from the node's hash, removal by tombstone, rehashed when live
   and dead slots reach 7/8 (to at most 13/16 live). Finding, adding and
   removing compare pointers only; only a rehash reads the nodes. */
#ifndef KCTL_NO_INDEXES
typedef struct kctl__pset {
    kctl__node **slots;
    uint32_t cap, count, used; /* used: live + tombstones */
} kctl__pset;
static kctl__node kctl__pset_tomb_;
#define KCTL__TOMB (&kctl__pset_tomb_)

static int kctl__pset_rehash(kctl__pset *s, const kctl_allocator *a, uint32_t cap) {
    kctl__node **n = (kctl__node **)kctl__alloc(a, (size_t)cap * sizeof *n);
    uint32_t i, j;
    if (!n) return KCTL_ERR_NOMEM;
    memset(n, 0, (size_t)cap * sizeof *n);
    for (i = 0; i < s->cap; i++)
        if (s->slots[i] && s->slots[i] != KCTL__TOMB) {
            for (j = s->slots[i]->hash & (cap - 1); n[j]; j = (j + 1) & (cap - 1)) { }
            n[j] = s->slots[i];
        }
    kctl__free(a, s->slots);
    s->slots = n;
    s->cap = cap;
    s->used = s->count;
    return KCTL_OK;
}

/* Room for one more. */
static int kctl__pset_reserve(kctl__pset *s, const kctl_allocator *a) {
    uint32_t cap = 8;
    if ((uint64_t)(s->used + 1) * 8 <= (uint64_t)s->cap * 7) return KCTL_OK;
    while ((uint64_t)(s->count + 1) * 16 > (uint64_t)cap * 13) {
        if (cap > UINT32_MAX / 4) return KCTL_ERR_NOMEM;
        cap *= 2;
    }
    return kctl__pset_rehash(s, a, cap);
}

static kctl__node **kctl__pset_find(const kctl__pset *s, const kctl__node *n) {
    uint32_t mask = s->cap - 1, i;
    if (!s->count) return NULL;
    for (i = n->hash & mask; s->slots[i]; i = (i + 1) & mask)
        if (s->slots[i] == n) return &s->slots[i];
    return NULL;
}

/* Add n (not present; after a reserve). */
static void kctl__pset_insert(kctl__pset *s, kctl__node *n) {
    uint32_t mask = s->cap - 1, i;
    for (i = n->hash & mask; s->slots[i] && s->slots[i] != KCTL__TOMB; i = (i + 1) & mask) { }
    if (!s->slots[i]) s->used++;
    s->slots[i] = n;
    s->count++;
}

static void kctl__pset_remove(kctl__pset *s, const kctl_allocator *a, kctl__node **slot) {
    *slot = KCTL__TOMB;
    s->count--;
    if (s->cap > 16 && (uint64_t)s->count * 8 < s->cap) (void)kctl__pset_rehash(s, a, s->cap / 2); /* best effort */
}

typedef struct kctl__ixbucket {
    kctl__node node;    /* the value, stored right after the bucket */
    kctl__pset members; /* the objects with this value */
} kctl__ixbucket;

typedef struct kctl__ixdef {
    char *name;
    kctl_index_fn fn;
    void *user_data;
} kctl__ixdef;
#endif

typedef struct kctl__ixdata {
    kctl__map items;
#ifndef KCTL_NO_INDEXES
    kctl__map *values; /* one per index: value -> bucket */
#endif
    size_t nbytes;     /* the objects' JSON documents (max_bytes) */
} kctl__ixdata;

struct kctl_indexer {
    kctl__rwlock lock;
    kctl_allocator allocator;
    uint32_t max_objects; /* 0: no bound */
    size_t max_bytes;     /* 0: no bound */
#ifndef KCTL_NO_INDEXES
    kctl__ixdef *defs;
    uint32_t ndefs;
#endif
    kctl__ixdata data;
    char *rv;
#if defined(KCTL__HINTS) && !defined(KCTL_NO_INDEXES)
    /* The member set of the first bucket the last put joined (in a
       namespace, the next object's likely one too) and its mask, stored
       relaxed under the lock, read without it only to prefetch
       (kctl__ix_prefetch: a stale address is harmless) */
    kctl__node **pf_slots;
    uint32_t pf_mask;
#endif
};

static kctl_obj *kctl__obj_of(const kctl__node *n) { return (kctl_obj *)(uintptr_t)n; } /* the node comes first */

/* Put n where old is (the same key, so the same hash). */
static void kctl__map_swap(kctl__map *m, const kctl__node *old, kctl__node *n) {
    size_t mask = m->cap - 1, i;
    for (i = old->hash & mask; m->slots[i].node != old; i = (i + 1) & mask) { }
    m->slots[i].node = n;
}

KCTL_API void kctl_obj_list_free(kctl_obj_list *l) {
    size_t i;
    if (!l) return;
    for (i = 0; i < l->count; i++) kctl_obj_unref(l->items[i]);
    kctl__free(&l->allocator, l->items);
    l->items = NULL;
    l->count = 0;
}

KCTL_API void kctl_str_list_free(kctl_str_list *l) {
    if (!l) return;
    kctl__free(&l->allocator, l->items); /* pointers and strings are one block */
    l->items = NULL;
    l->count = 0;
}

#ifndef KCTL_NO_INDEXES
static int kctl__ix_namespace(const kctl_obj *obj, kctl_index_emit emit, void *ctx, void *user_data) {
    (void)user_data;
    emit(kctl_obj_namespace(obj), ctx);
    return KCTL_OK;
}

static void kctl__ix_drop_bucket(kctl_indexer *ix, kctl__map *values, kctl__ixbucket *b) {
    kctl__map_remove(values, &ix->allocator, &b->node);
    kctl__free(&ix->allocator, b->members.slots);
    kctl__free(&ix->allocator, b);
}

/* What the values an index function emits for an object are used for. */
enum {
    KCTL__IX_RESERVE, /* make the buckets and room in them (may fail) */
    KCTL__IX_UNDO,    /* after a failed RESERVE: drop the buckets it made (still empty) */
    KCTL__IX_INSERT,  /* after RESERVE: put the object in (cannot fail) */
    KCTL__IX_REMOVE   /* take the object out where it still is */
};

/* Buckets RESERVE remembers for INSERT (more: INSERT runs the functions
   again; small builds remember none and always run them again). */
#if KCTL_SMALL
#define KCTL__IX_SEEN 0
#else
#define KCTL__IX_SEEN 16
#endif
typedef struct kctl__ixemit {
    kctl_indexer *ix;
    kctl__ixdata *d;
    kctl_obj *obj;
    kctl_obj *old; /* the version obj replaces, if any */
    uint32_t index;
    int mode, err;
#if KCTL__IX_SEEN
    uint32_t nseen;                        /* buckets RESERVE went through, */
    kctl__ixbucket *seen[KCTL__IX_SEEN];   /* the first KCTL__IX_SEEN of them */
#endif
} kctl__ixemit;

/* Put obj in bucket b (after a reserve): into the slot of the version it
   replaces if that one is there. */
static void kctl__ix_join(kctl__ixbucket *b, kctl_obj *obj, const kctl_obj *old) {
    kctl__node **slot;
    if (kctl__pset_find(&b->members, &obj->node)) return; /* the same value twice */
    if (old && (slot = kctl__pset_find(&b->members, &old->node))) *slot = &obj->node; /* the same key: the same hash */
    else if (b->members.used < b->members.cap) kctl__pset_insert(&b->members, &obj->node);
}

static void kctl__ix_emit(const char *value, void *ctx) {
    kctl__ixemit *e = (kctl__ixemit *)ctx;
    kctl__map *values = &e->d->values[e->index];
    kctl__ixbucket *b;
    kctl__node **slot;
    size_t len;
    uint32_t h;
    if (e->err) return;
    if (!value) {
        if (e->mode == KCTL__IX_RESERVE) e->err = KCTL_ERR_INVALID_ARG;
        return;
    }
    len = kctl__strlen(value);
    h = kctl__hash(value, len);
    b = (kctl__ixbucket *)kctl__map_find(values, value, len, h);
    switch (e->mode) {
    case KCTL__IX_RESERVE:
        if (!b) {
            if (kctl__map_reserve(values, &e->ix->allocator) != KCTL_OK ||
                !(b = (kctl__ixbucket *)kctl__alloc(&e->ix->allocator, sizeof *b + len + 1))) {
                e->err = KCTL_ERR_NOMEM;
                return;
            }
            memset(b, 0, sizeof *b);
            kctl__memcpy(b + 1, value, len + 1);
            b->node.key = (const char *)(b + 1);
            b->node.len = (uint32_t)len;
            b->node.hash = h;
            kctl__map_insert(values, &b->node);
        }
        if (kctl__pset_reserve(&b->members, &e->ix->allocator) != KCTL_OK) e->err = KCTL_ERR_NOMEM;
#if KCTL__IX_SEEN
        else if (e->nseen++ < KCTL__IX_SEEN) e->seen[e->nseen - 1] = b;
#endif
        break;
    case KCTL__IX_UNDO:
        if (b && !b->members.count) kctl__ix_drop_bucket(e->ix, values, b);
        break;
    case KCTL__IX_INSERT:
        if (b) kctl__ix_join(b, e->obj, e->old); /* RESERVE made it: only a function that changed its mind finds none */
        break;
    default: /* KCTL__IX_REMOVE */
        if (!b) break;
#if KCTL__IX_SEEN
        {
            uint32_t i;
            for (i = 0; i < e->nseen && i < KCTL__IX_SEEN; i++)
                if (e->seen[i] == b) return; /* the new version joined it: it has the slot */
        }
#endif
        if (!(slot = kctl__pset_find(&b->members, &e->obj->node))) break; /* the new version took the slot */
        kctl__pset_remove(&b->members, &e->ix->allocator, slot);
        if (!b->members.count) kctl__ix_drop_bucket(e->ix, values, b);
        break;
    }
}

/* Run the index functions [from, to) on obj in e's mode; RESERVE's error. */
static int kctl__ix_run_e(kctl__ixemit *e, kctl_obj *obj, uint32_t from, uint32_t to) {
    uint32_t i;
    e->obj = obj;
    for (i = from; i < to && !e->err; i++) {
        int rc;
        e->index = i;
        rc = e->ix->defs[i].fn(obj, kctl__ix_emit, e, e->ix->defs[i].user_data);
        if (rc != KCTL_OK && e->mode == KCTL__IX_RESERVE && !e->err) e->err = rc < 0 ? rc : KCTL_ERR_INVALID_ARG;
    }
    return e->err;
}

static int kctl__ix_run(kctl_indexer *ix, kctl__ixdata *d, int mode, kctl_obj *obj, uint32_t from, uint32_t to) {
    kctl__ixemit e;
    memset(&e, 0, sizeof e);
    e.ix = ix;
    e.d = d;
    e.mode = mode;
    return kctl__ix_run_e(&e, obj, from, to);
}

/* Index obj in [from, to), all or nothing; e (zeroed but for ix and d)
   keeps the buckets it joined. */
static int kctl__ix_index_e(kctl__ixemit *e, kctl_obj *obj, uint32_t from, uint32_t to) {
    int rc;
    e->mode = KCTL__IX_RESERVE;
    if ((rc = kctl__ix_run_e(e, obj, from, to)) != KCTL_OK) {
        kctl__ix_run(e->ix, e->d, KCTL__IX_UNDO, obj, from, to);
        return rc;
    }
#if KCTL__IX_SEEN
    if (e->nseen <= KCTL__IX_SEEN) {
        uint32_t i;
        for (i = 0; i < e->nseen; i++) kctl__ix_join(e->seen[i], obj, e->old);
#ifdef KCTL__HINTS
        if (e->nseen) {
            KCTL__STORE(&e->ix->pf_slots, e->seen[0]->members.slots);
            KCTL__STORE(&e->ix->pf_mask, e->seen[0]->members.cap - 1);
        }
#endif
    } else
#endif
    { /* more buckets than remembered: find them again (e keeps old and seen) */
        e->mode = KCTL__IX_INSERT;
        kctl__ix_run_e(e, obj, from, to);
    }
    return KCTL_OK;
}

static int kctl__ix_index(kctl_indexer *ix, kctl__ixdata *d, kctl_obj *obj, uint32_t from, uint32_t to) {
    kctl__ixemit e;
    memset(&e, 0, sizeof e);
    e.ix = ix;
    e.d = d;
    return kctl__ix_index_e(&e, obj, from, to);
}
#endif /* !KCTL_NO_INDEXES */

/* Start loading what a put of the key of hash h will miss on: its slot
   in the cache and, in the member set the last put joined, its slot
   there. Hints only, no lock (the informer's, for the next key of its
   backlog). */
static KCTL__UNUSED void kctl__ix_prefetch(kctl_indexer *ix, uint32_t h) {
    kctl__map_prefetch(&ix->data.items, h);
#if defined(KCTL__HINTS) && !defined(KCTL_NO_INDEXES)
    {
        kctl__node **ps = KCTL__LOAD(&ix->pf_slots);
        if (ps) KCTL__PREFETCH((const void *)((uintptr_t)ps + (uintptr_t)(h & KCTL__LOAD(&ix->pf_mask)) * sizeof *ps));
    }
#endif
}

/* Store obj in d (add or replace); on failure d is as it was. */
static int kctl__ix_put(kctl_indexer *ix, kctl__ixdata *d, kctl_obj *obj) {
    kctl__node *n = kctl__map_find(&d->items, obj->node.key, obj->node.len, obj->node.hash);
    kctl_obj *old = n ? kctl__obj_of(n) : NULL;
#ifndef KCTL_NO_INDEXES
    int rc;
    kctl__ixemit e;
#endif
    size_t add, sub;
    if (old == obj) return KCTL_OK; /* the very same object: nothing changes */
    kctl_obj_json(obj, &add);
    sub = 0;
    if (old) kctl_obj_json(old, &sub);
    if ((!old && ix->max_objects && d->items.count >= ix->max_objects) ||
        (ix->max_bytes && add > sub && (add - sub > ix->max_bytes || d->nbytes > ix->max_bytes - (add - sub))))
        return KCTL_ERR_FULL;
    /* 13/16 full at most: the cache is big and long-lived, and a probe compares hashes in one array */
    if (!old && kctl__map_reserve_to(&d->items, &ix->allocator, 13) != KCTL_OK) return KCTL_ERR_NOMEM;
#ifndef KCTL_NO_INDEXES
    memset(&e, 0, sizeof e);
    e.ix = ix;
    e.d = d;
    e.old = old;
    if ((rc = kctl__ix_index_e(&e, obj, 0, ix->ndefs)) != KCTL_OK) return rc;
#endif
    kctl_obj_ref(obj);
    d->nbytes += add - sub; /* modulo: exact */
    if (old) { /* the old version leaves the buckets the new one did not take over */
#ifndef KCTL_NO_INDEXES
        e.mode = KCTL__IX_REMOVE;
        kctl__ix_run_e(&e, old, 0, ix->ndefs);
#endif
        kctl__map_swap(&d->items, &old->node, &obj->node);
        kctl_obj_unref(old);
    } else {
        kctl__map_insert(&d->items, &obj->node);
    }
    return KCTL_OK;
}

#ifndef KCTL_NO_INDEXES
static void kctl__ix_free_index(kctl_indexer *ix, kctl__map *values) {
    size_t i;
    for (i = 0; i < values->cap; i++) {
        kctl__ixbucket *b = (kctl__ixbucket *)values->slots[i].node;
        if (!b) continue;
        kctl__free(&ix->allocator, b->members.slots);
        kctl__free(&ix->allocator, b);
    }
    kctl__free(&ix->allocator, values->slots);
    memset(values, 0, sizeof *values);
}
#endif

static void kctl__ix_free_data(kctl_indexer *ix, kctl__ixdata *d, uint32_t nvalues) {
    size_t i;
    for (i = 0; i < d->items.cap; i++)
        if (d->items.slots[i].node) kctl_obj_unref(kctl__obj_of(d->items.slots[i].node));
    kctl__free(&ix->allocator, d->items.slots);
#ifndef KCTL_NO_INDEXES
    for (i = 0; i < nvalues && d->values; i++) kctl__ix_free_index(ix, &d->values[i]);
    kctl__free(&ix->allocator, d->values);
#else
    (void)nvalues;
#endif
    memset(d, 0, sizeof *d);
}

KCTL_API int kctl_indexer_create(const kctl_indexer_desc *desc, kctl_indexer **out) {
    kctl_indexer *ix;
    int rc;
    if (!out) return KCTL_ERR_INVALID_ARG;
    *out = NULL;
    if (desc && (!desc->allocator.alloc_fn) != (!desc->allocator.free_fn)) return KCTL_ERR_INVALID_ARG;
    if (!(ix = (kctl_indexer *)kctl__alloc(desc ? &desc->allocator : NULL, sizeof *ix))) return KCTL_ERR_NOMEM;
    memset(ix, 0, sizeof *ix);
    if (desc) {
        ix->allocator = desc->allocator;
        ix->max_objects = desc->max_objects;
        ix->max_bytes = desc->max_bytes;
    }
    if (kctl__rwlock_init(&ix->lock) != KCTL_OK) {
        kctl__free(&ix->allocator, ix);
        return KCTL_ERR_NOMEM;
    }
#ifndef KCTL_NO_INDEXES
    if ((rc = kctl_indexer_add_index(ix, "namespace", kctl__ix_namespace, NULL)) != KCTL_OK) {
        kctl_indexer_destroy(ix);
        return rc;
    }
#else
    (void)rc; /* "namespace" is answered by a scan */
#endif
    *out = ix;
    return KCTL_OK;
}

KCTL_API void kctl_indexer_destroy(kctl_indexer *ix) {
    if (!ix) return;
#ifndef KCTL_NO_INDEXES
    {
        uint32_t i;
        kctl__ix_free_data(ix, &ix->data, ix->ndefs);
        for (i = 0; i < ix->ndefs; i++) kctl__free(&ix->allocator, ix->defs[i].name);
        kctl__free(&ix->allocator, ix->defs);
    }
#else
    kctl__ix_free_data(ix, &ix->data, 0);
#endif
    kctl__free(&ix->allocator, ix->rv);
    kctl__rwlock_deinit(&ix->lock);
    kctl__free(&ix->allocator, ix);
}

#ifdef KCTL_NO_INDEXES
KCTL_API int kctl_indexer_add_index(kctl_indexer *ix, const char *name, kctl_index_fn fn, void *user_data) {
    (void)user_data;
    if (!ix || !name || !*name || !fn) return KCTL_ERR_INVALID_ARG;
    return kctl__strcmp(name, "namespace") == 0 ? KCTL_ERR_EXISTS : KCTL_ERR_UNSUPPORTED; /* the built-in one only */
}
#else
KCTL_API int kctl_indexer_add_index(kctl_indexer *ix, const char *name, kctl_index_fn fn, void *user_data) {
    kctl__ixdef *defs;
    kctl__map *values;
    char *copy;
    size_t n, i;
    uint32_t k;
    int rc = KCTL_OK;
    if (!ix || !name || !*name || !fn) return KCTL_ERR_INVALID_ARG;
    n = kctl__strlen(name);
    kctl__rwlock_wr(&ix->lock);
    for (k = 0; k < ix->ndefs; k++)
        if (kctl__strcmp(ix->defs[k].name, name) == 0) { rc = KCTL_ERR_EXISTS; goto out; }
    copy = (char *)kctl__alloc(&ix->allocator, n + 1);
    defs = (kctl__ixdef *)kctl__alloc(&ix->allocator, (ix->ndefs + 1) * sizeof *defs);
    values = (kctl__map *)kctl__alloc(&ix->allocator, (ix->ndefs + 1) * sizeof *values);
    if (!copy || !defs || !values) {
        kctl__free(&ix->allocator, copy);
        kctl__free(&ix->allocator, defs);
        kctl__free(&ix->allocator, values);
        rc = KCTL_ERR_NOMEM;
        goto out;
    }
    kctl__memcpy(copy, name, n + 1);
    if (ix->ndefs) {
        kctl__memcpy(defs, ix->defs, ix->ndefs * sizeof *defs);
        kctl__memcpy(values, ix->data.values, ix->ndefs * sizeof *values);
    }
    defs[ix->ndefs].name = copy;
    defs[ix->ndefs].fn = fn;
    defs[ix->ndefs].user_data = user_data;
    memset(&values[ix->ndefs], 0, sizeof *values);
    kctl__free(&ix->allocator, ix->defs);
    kctl__free(&ix->allocator, ix->data.values);
    ix->defs = defs;
    ix->data.values = values;
    ix->ndefs++;
    /* index what is there already; on failure take the index back out */
    for (i = 0; i < ix->data.items.cap && rc == KCTL_OK; i++)
        if (ix->data.items.slots[i].node)
            rc = kctl__ix_index(ix, &ix->data, kctl__obj_of(ix->data.items.slots[i].node), ix->ndefs - 1, ix->ndefs);
    if (rc != KCTL_OK) {
        ix->ndefs--;
        kctl__ix_free_index(ix, &ix->data.values[ix->ndefs]);
        kctl__free(&ix->allocator, ix->defs[ix->ndefs].name);
    }
out:
    kctl__rwlock_wr_unlock(&ix->lock);
    return rc;
}
#endif

KCTL_API int kctl_indexer_add(kctl_indexer *ix, kctl_obj *obj) {
    int rc;
    if (!ix || !obj) return KCTL_ERR_INVALID_ARG;
    kctl__rwlock_wr(&ix->lock);
    rc = kctl__ix_put(ix, &ix->data, obj);
    kctl__rwlock_wr_unlock(&ix->lock);
    return rc;
}

KCTL_API int kctl_indexer_update(kctl_indexer *ix, kctl_obj *obj) { return kctl_indexer_add(ix, obj); }

/* kctl_indexer_add that also hands back, in *old, the object it replaces
   (a new reference; NULL if none), found in the same hold of the write
   lock: the informer's one trip to the cache per event. On failure the
   cache is unchanged and *old is still set. held: the caller holds the
   write lock (kctl__indexer_hold), across several of these. */
#if !KCTL_SMALL
static int kctl__indexer_put_old(kctl_indexer *ix, kctl_obj *obj, kctl_obj **old, bool held) {
    kctl__node *n;
    int rc;
    if (!held) kctl__rwlock_wr(&ix->lock);
    n = kctl__map_find(&ix->data.items, obj->node.key, obj->node.len, obj->node.hash);
    *old = n ? kctl_obj_ref(kctl__obj_of(n)) : NULL;
    rc = kctl__ix_put(ix, &ix->data, obj);
    if (!held) kctl__rwlock_wr_unlock(&ix->lock);
    return rc;
}
#endif
#if !KCTL_SMALL && !defined(KCTL_NO_THREADS)
/* The write lock taken for a run of kctl__indexer_put_old(held) and let
   go: readers meanwhile wait; no other call of this thread's on ix may
   come in between. */
static void kctl__indexer_hold(kctl_indexer *ix) { kctl__rwlock_wr(&ix->lock); }
static void kctl__indexer_release(kctl_indexer *ix) { kctl__rwlock_wr_unlock(&ix->lock); }
#endif

KCTL_API int kctl_indexer_delete(kctl_indexer *ix, const char *key) {
    kctl__node *n;
    kctl_obj *o;
    size_t len;
    if (!ix || !key) return KCTL_ERR_INVALID_ARG;
    len = kctl__strlen(key);
    kctl__rwlock_wr(&ix->lock);
    n = kctl__map_find(&ix->data.items, key, len, kctl__hash(key, len));
    if (!n) {
        kctl__rwlock_wr_unlock(&ix->lock);
        return KCTL_ERR_NOT_FOUND;
    }
    o = kctl__obj_of(n);
#ifndef KCTL_NO_INDEXES
    kctl__ix_run(ix, &ix->data, KCTL__IX_REMOVE, o, 0, ix->ndefs);
#endif
    kctl__map_remove(&ix->data.items, &ix->allocator, n);
    {
        size_t sub = 0;
        kctl_obj_json(o, &sub);
        ix->data.nbytes -= sub;
    }
    kctl__rwlock_wr_unlock(&ix->lock);
    kctl_obj_unref(o);
    return KCTL_OK;
}

KCTL_API kctl_obj *kctl_indexer_get(kctl_indexer *ix, const char *key) {
    unsigned rs;
    kctl__node *n;
    kctl_obj *o = NULL;
    size_t len;
    uint32_t h;
    if (!ix || !key) return NULL;
    len = kctl__strlen(key);
    h = kctl__hash(key, len);
    rs = kctl__rwlock_rd(&ix->lock);
    n = kctl__map_find(&ix->data.items, key, len, h);
    if (n) o = kctl_obj_ref(kctl__obj_of(n));
    kctl__rwlock_rd_unlock(&ix->lock, rs);
    return o;
}

KCTL_API int kctl_indexer_read(kctl_indexer *ix, const char *key, kctl_obj_read_fn fn, void *user_data) {
    unsigned rs;
    kctl__node *n;
    size_t len;
    uint32_t h;
    int rc = KCTL_ERR_NOT_FOUND;
    if (!ix || !key || !fn) return KCTL_ERR_INVALID_ARG;
    len = kctl__strlen(key);
    h = kctl__hash(key, len);
    rs = kctl__rwlock_rd(&ix->lock);
    n = kctl__map_find(&ix->data.items, key, len, h);
    if (n) rc = fn(kctl__obj_of(n), user_data); /* writers wait for the read side: n stays until it is let go */
    kctl__rwlock_rd_unlock(&ix->lock, rs);
    return rc;
}

KCTL_API size_t kctl_indexer_len(kctl_indexer *ix) {
    unsigned rs;
    size_t n;
    if (!ix) return 0;
    rs = kctl__rwlock_rd(&ix->lock);
    n = ix->data.items.count;
    kctl__rwlock_rd_unlock(&ix->lock, rs);
    return n;
}

static int kctl__ix_objs_begin(kctl_indexer *ix, kctl_obj_list *out, size_t n) {
    out->allocator = ix->allocator;
    out->count = 0;
    out->items = n ? (kctl_obj **)kctl__alloc(&ix->allocator, n * sizeof *out->items) : NULL;
    return n && !out->items ? KCTL_ERR_NOMEM : KCTL_OK;
}

KCTL_API int kctl_indexer_list(kctl_indexer *ix, kctl_obj_list *out) {
    unsigned rs;
    size_t i;
    int rc;
    if (!out) return KCTL_ERR_INVALID_ARG;
    memset(out, 0, sizeof *out);
    if (!ix) return KCTL_ERR_INVALID_ARG;
    rs = kctl__rwlock_rd(&ix->lock);
    if ((rc = kctl__ix_objs_begin(ix, out, ix->data.items.count)) == KCTL_OK)
        for (i = 0; i < ix->data.items.cap; i++)
            if (ix->data.items.slots[i].node) out->items[out->count++] = kctl_obj_ref(kctl__obj_of(ix->data.items.slots[i].node));
    kctl__rwlock_rd_unlock(&ix->lock, rs);
    return rc;
}

/* fn(obj, ctx) for every object, under the read side, until one is not
   OK: its result. For the FIFO the cache feeds (its known objects). */
static int kctl__ix_each(kctl_indexer *ix, int (*fn)(kctl_obj *obj, void *ctx), void *ctx) {
    unsigned rs = kctl__rwlock_rd(&ix->lock);
    size_t i;
    int rc = KCTL_OK;
    for (i = 0; i < ix->data.items.cap && rc == KCTL_OK; i++)
        if (ix->data.items.slots[i].node) rc = fn(kctl__obj_of(ix->data.items.slots[i].node), ctx);
    kctl__rwlock_rd_unlock(&ix->lock, rs);
    return rc;
}

/* A string list from n strings yielded by next(ctx, i, &s, &len). */
static int kctl__str_list(kctl_indexer *ix, kctl_str_list *out, size_t n,
                          void (*next)(void *ctx, size_t i, const char **s, size_t *len), void *ctx) {
    size_t i, bytes = n * sizeof(char *), len;
    const char *s;
    char *p;
    out->allocator = ix->allocator;
    out->count = 0;
    out->items = NULL;
    if (!n) return KCTL_OK;
    for (i = 0; i < n; i++) {
        next(ctx, i, &s, &len);
        bytes += len + 1;
    }
    if (!(out->items = (char **)kctl__alloc(&ix->allocator, bytes))) return KCTL_ERR_NOMEM;
    p = (char *)(out->items + n);
    for (i = 0; i < n; i++) {
        next(ctx, i, &s, &len);
        kctl__memcpy(p, s, len);
        p[len] = '\0';
        out->items[i] = p;
        p += len + 1;
    }
    out->count = n;
    return KCTL_OK;
}

/* Yield the nodes of a map (keys or index values) in slot order: ctx is
   the map; i counts nodes, so walk with a cursor. */
typedef struct kctl__mapwalk {
    const kctl__map *map;  /* the nodes of a map, */
#ifndef KCTL_NO_INDEXES
    const kctl__pset *set; /* or of a set */
#endif
    size_t slot;
} kctl__mapwalk;

static void kctl__walk_nodes(void *ctx, size_t i, const char **s, size_t *len) {
    kctl__mapwalk *w = (kctl__mapwalk *)ctx;
    const kctl__node *n;
    if (i == 0) w->slot = 0;
#ifndef KCTL_NO_INDEXES
    if (w->set) {
        while (!w->set->slots[w->slot] || w->set->slots[w->slot] == KCTL__TOMB) w->slot++;
        n = w->set->slots[w->slot];
    } else
#endif
    {
        while (!w->map->slots[w->slot].node) w->slot++;
        n = w->map->slots[w->slot].node;
    }
    *s = n->key;
    *len = n->len;
    w->slot++;
}

KCTL_API int kctl_indexer_list_keys(kctl_indexer *ix, kctl_str_list *out) {
    unsigned rs;
    kctl__mapwalk w;
    int rc;
    if (!out) return KCTL_ERR_INVALID_ARG;
    memset(out, 0, sizeof *out);
    if (!ix) return KCTL_ERR_INVALID_ARG;
    memset(&w, 0, sizeof w);
    rs = kctl__rwlock_rd(&ix->lock);
    w.map = &ix->data.items;
    rc = kctl__str_list(ix, out, ix->data.items.count, kctl__walk_nodes, &w);
    kctl__rwlock_rd_unlock(&ix->lock, rs);
    return rc;
}

#ifndef KCTL_NO_INDEXES
/* The bucket of value in index name, lock held: NOT_FOUND for no such
   index; *b NULL when the value has no objects. */
static int kctl__ix_bucket(kctl_indexer *ix, const char *name, const char *value, kctl__ixbucket **b) {
    uint32_t k;
    size_t len;
    *b = NULL;
    for (k = 0; k < ix->ndefs; k++)
        if (kctl__strcmp(ix->defs[k].name, name) == 0) break;
    if (k == ix->ndefs) return KCTL_ERR_NOT_FOUND;
    if (value) {
        len = kctl__strlen(value);
        *b = (kctl__ixbucket *)kctl__map_find(&ix->data.values[k], value, len, kctl__hash(value, len));
    }
    return KCTL_OK;
}

KCTL_API int kctl_indexer_by_index(kctl_indexer *ix, const char *name, const char *value, kctl_obj_list *out) {
    unsigned rs;
    kctl__ixbucket *b;
    size_t i;
    int rc;
    if (!out) return KCTL_ERR_INVALID_ARG;
    memset(out, 0, sizeof *out);
    if (!ix || !name || !value) return KCTL_ERR_INVALID_ARG;
    rs = kctl__rwlock_rd(&ix->lock);
    rc = kctl__ix_bucket(ix, name, value, &b);
    if (rc == KCTL_OK && b && (rc = kctl__ix_objs_begin(ix, out, b->members.count)) == KCTL_OK)
        for (i = 0; i < b->members.cap; i++)
            if (b->members.slots[i] && b->members.slots[i] != KCTL__TOMB) out->items[out->count++] = kctl_obj_ref(kctl__obj_of(b->members.slots[i]));
    kctl__rwlock_rd_unlock(&ix->lock, rs);
    return rc;
}

KCTL_API int kctl_indexer_index_keys(kctl_indexer *ix, const char *name, const char *value, kctl_str_list *out) {
    unsigned rs;
    kctl__ixbucket *b;
    kctl__mapwalk w;
    int rc;
    if (!out) return KCTL_ERR_INVALID_ARG;
    memset(out, 0, sizeof *out);
    if (!ix || !name || !value) return KCTL_ERR_INVALID_ARG;
    memset(&w, 0, sizeof w);
    rs = kctl__rwlock_rd(&ix->lock);
    rc = kctl__ix_bucket(ix, name, value, &b);
    if (rc == KCTL_OK && b) {
        w.set = &b->members;
        rc = kctl__str_list(ix, out, b->members.count, kctl__walk_nodes, &w);
    }
    kctl__rwlock_rd_unlock(&ix->lock, rs);
    return rc;
}

KCTL_API int kctl_indexer_list_index_values(kctl_indexer *ix, const char *name, kctl_str_list *out) {
    unsigned rs;
    kctl__mapwalk w;
    kctl__ixbucket *b;
    uint32_t k;
    int rc;
    if (!out) return KCTL_ERR_INVALID_ARG;
    memset(out, 0, sizeof *out);
    if (!ix || !name) return KCTL_ERR_INVALID_ARG;
    memset(&w, 0, sizeof w);
    rs = kctl__rwlock_rd(&ix->lock);
    rc = kctl__ix_bucket(ix, name, NULL, &b);
    if (rc == KCTL_OK) {
        for (k = 0; kctl__strcmp(ix->defs[k].name, name) != 0; k++) { }
        w.map = &ix->data.values[k];
        rc = kctl__str_list(ix, out, w.map->count, kctl__walk_nodes, &w);
    }
    kctl__rwlock_rd_unlock(&ix->lock, rs);
    return rc;
}
#else /* KCTL_NO_INDEXES: the one index, "namespace", answered by a scan of the cache */
/* The objects of namespace ns, counted (out NULL) or referenced into out
   (room for them). Read side held. */
static size_t kctl__ix_in_ns(kctl_indexer *ix, const char *ns, kctl_obj **out) {
    size_t i, n = 0;
    for (i = 0; i < ix->data.items.cap; i++) {
        kctl__node *nd = ix->data.items.slots[i].node;
        if (!nd || kctl__strcmp(kctl_obj_namespace(kctl__obj_of(nd)), ns) != 0) continue;
        if (out) out[n] = kctl_obj_ref(kctl__obj_of(nd));
        n++;
    }
    return n;
}

static void kctl__walk_strs(void *ctx, size_t i, const char **s, size_t *len) {
    *s = ((const char *const *)ctx)[i];
    *len = kctl__strlen(*s);
}

/* The keys of namespace ns's objects, or (ns NULL) the namespaces the
   objects are in, once each. Read side held. */
static int kctl__ix_ns_strs(kctl_indexer *ix, const char *ns, kctl_str_list *out) {
    const char **v = NULL;
    size_t i, k, n = 0;
    int rc;
    if (ix->data.items.count && !(v = (const char **)kctl__alloc(&ix->allocator, ix->data.items.count * sizeof *v)))
        return KCTL_ERR_NOMEM;
    for (i = 0; i < ix->data.items.cap; i++) {
        kctl__node *nd = ix->data.items.slots[i].node;
        const char *in;
        if (!nd) continue;
        in = kctl_obj_namespace(kctl__obj_of(nd));
        if (ns) {
            if (kctl__strcmp(in, ns) == 0) v[n++] = nd->key;
            continue;
        }
        for (k = 0; k < n && kctl__strcmp(v[k], in) != 0; k++) { }
        if (k == n) v[n++] = in;
    }
    rc = kctl__str_list(ix, out, n, kctl__walk_strs, v);
    kctl__free(&ix->allocator, v);
    return rc;
}

static int kctl__ix_ns_only(const char *name) { return kctl__strcmp(name, "namespace") == 0 ? KCTL_OK : KCTL_ERR_NOT_FOUND; }

KCTL_API int kctl_indexer_by_index(kctl_indexer *ix, const char *name, const char *value, kctl_obj_list *out) {
    unsigned rs;
    int rc;
    if (!out) return KCTL_ERR_INVALID_ARG;
    memset(out, 0, sizeof *out);
    if (!ix || !name || !value) return KCTL_ERR_INVALID_ARG;
    rs = kctl__rwlock_rd(&ix->lock);
    if ((rc = kctl__ix_ns_only(name)) == KCTL_OK && (rc = kctl__ix_objs_begin(ix, out, kctl__ix_in_ns(ix, value, NULL))) == KCTL_OK &&
        out->items)
        out->count = kctl__ix_in_ns(ix, value, out->items);
    kctl__rwlock_rd_unlock(&ix->lock, rs);
    return rc;
}

KCTL_API int kctl_indexer_index_keys(kctl_indexer *ix, const char *name, const char *value, kctl_str_list *out) {
    unsigned rs;
    int rc;
    if (!out) return KCTL_ERR_INVALID_ARG;
    memset(out, 0, sizeof *out);
    if (!ix || !name || !value) return KCTL_ERR_INVALID_ARG;
    rs = kctl__rwlock_rd(&ix->lock);
    if ((rc = kctl__ix_ns_only(name)) == KCTL_OK) rc = kctl__ix_ns_strs(ix, value, out);
    kctl__rwlock_rd_unlock(&ix->lock, rs);
    return rc;
}

KCTL_API int kctl_indexer_list_index_values(kctl_indexer *ix, const char *name, kctl_str_list *out) {
    unsigned rs;
    int rc;
    if (!out) return KCTL_ERR_INVALID_ARG;
    memset(out, 0, sizeof *out);
    if (!ix || !name) return KCTL_ERR_INVALID_ARG;
    rs = kctl__rwlock_rd(&ix->lock);
    if ((rc = kctl__ix_ns_only(name)) == KCTL_OK) rc = kctl__ix_ns_strs(ix, NULL, out);
    kctl__rwlock_rd_unlock(&ix->lock, rs);
    return rc;
}
#endif /* KCTL_NO_INDEXES */

KCTL_API int kctl_indexer_replace(kctl_indexer *ix, kctl_obj *const *objs, size_t n, const char *rv) {
    unsigned rs;
    kctl__ixdata fresh, old;
    char *rvcopy = NULL;
    size_t i;
    uint32_t ndefs;
    int rc = KCTL_OK;
    if (!ix || (n && !objs)) return KCTL_ERR_INVALID_ARG;
    for (i = 0; i < n; i++)
        if (!objs[i]) return KCTL_ERR_INVALID_ARG;
    memset(&fresh, 0, sizeof fresh);
    if (rv) {
        size_t len = kctl__strlen(rv);
        if (!(rvcopy = (char *)kctl__alloc(&ix->allocator, len + 1))) return KCTL_ERR_NOMEM;
        kctl__memcpy(rvcopy, rv, len + 1);
    }
    /* The index set cannot change meanwhile: add_index takes the write lock
       too, so build under the read lock (readers go on, writers wait). */
    rs = kctl__rwlock_rd(&ix->lock);
#ifndef KCTL_NO_INDEXES
    ndefs = ix->ndefs;
    fresh.values = (kctl__map *)kctl__alloc(&ix->allocator, ndefs * sizeof *fresh.values);
    if (!fresh.values) rc = KCTL_ERR_NOMEM;
    else memset(fresh.values, 0, ndefs * sizeof *fresh.values);
#else
    ndefs = 0;
#endif
    for (i = 0; i < n && rc == KCTL_OK; i++) rc = kctl__ix_put(ix, &fresh, objs[i]);
    kctl__rwlock_rd_unlock(&ix->lock, rs);
    if (rc != KCTL_OK) {
        kctl__ix_free_data(ix, &fresh, ndefs);
        kctl__free(&ix->allocator, rvcopy);
        return rc;
    }
    kctl__rwlock_wr(&ix->lock);
#ifndef KCTL_NO_INDEXES
    if (ix->ndefs != ndefs) { /* an index was added while we built: build again */
        kctl__rwlock_wr_unlock(&ix->lock);
        kctl__ix_free_data(ix, &fresh, ndefs);
        kctl__free(&ix->allocator, rvcopy);
        return kctl_indexer_replace(ix, objs, n, rv);
    }
#endif
    old = ix->data;
    ix->data = fresh;
    if (rvcopy) {
        kctl__free(&ix->allocator, ix->rv);
        ix->rv = rvcopy;
    }
    kctl__rwlock_wr_unlock(&ix->lock);
    kctl__ix_free_data(ix, &old, ndefs);
    return KCTL_OK;
}

KCTL_API int kctl_indexer_resource_version(kctl_indexer *ix, char *buf, size_t cap) {
    unsigned rs;
    size_t len;
    int rc = KCTL_OK;
    if (!ix || !buf || !cap) return KCTL_ERR_INVALID_ARG;
    rs = kctl__rwlock_rd(&ix->lock);
    len = ix->rv ? kctl__strlen(ix->rv) : 0;
    if (len >= cap) rc = KCTL_ERR_TOO_LARGE;
    else kctl__memcpy(buf, ix->rv ? ix->rv : "", len + 1);
    kctl__rwlock_rd_unlock(&ix->lock, rs);
    return rc;
}

/* ------------------------------------------------------ >>fifo DELTA FIFO */
/* A key is in the map exactly while it has deltas, and then it is queued
   once, in the order it first got one. */
typedef struct kctl__fitem {
    kctl__node node; /* the key, stored right after the item */
    struct kctl__fitem *next;
    kctl_delta *deltas;
    uint32_t n, cap;
    uint32_t key_cap; /* room for the key after the item, its NUL included */
    bool initial;    /* queued by the first replace: has_synced waits for it */
    bool listed;     /* queued by the replace in progress (false outside one) */
} kctl__fitem;

#define KCTL__FIFO_POOL 64 /* processed items kept, with their delta arrays, for reuse */

struct kctl_fifo {
    kctl__mutex mu;
    kctl__cond cv;
    kctl_allocator allocator;
    kctl_indexer *known;
    kctl__map items;
    kctl__fitem *head, *tail;
    bool closed, populated;
    uint32_t waiters;  /* pops waiting for a key */
    size_t initial;    /* items marked initial still queued */
    kctl__fitem *pool; /* processed items for reuse (next-linked): the steady state allocates nothing */
    uint32_t npool;
};

static kctl__fitem *kctl__fifo_find(kctl_fifo *f, const char *key) {
    size_t len = kctl__strlen(key);
    return (kctl__fitem *)kctl__map_find(&f->items, key, len, kctl__hash(key, len));
}

static void kctl__fifo_free_item(kctl_fifo *f, kctl__fitem *it) {
    uint32_t i;
    for (i = 0; i < it->n; i++) kctl_obj_unref(it->deltas[i].obj);
    kctl__free(&f->allocator, it->deltas);
    kctl__free(&f->allocator, it);
}

/* An item for a key of len bytes: a pooled one whose key fits, or a new
   one (NULL: NOMEM). Lock held. */
static kctl__fitem *kctl__fifo_item_new(kctl_fifo *f, size_t len) {
    kctl__fitem *it = f->pool;
    size_t cap;
    if (it && it->key_cap > len) {
        f->pool = it->next;
        f->npool--;
        it->next = NULL;
        it->initial = false;
        return it;
    }
    cap = len + 1 < 32 ? 32 : (len + 8) & ~(size_t)7;
    if (cap > UINT32_MAX || !(it = (kctl__fitem *)kctl__alloc(&f->allocator, sizeof *it + cap))) return NULL;
    memset(it, 0, sizeof *it);
    it->key_cap = (uint32_t)cap;
    return it;
}

/* Keep an item without deltas for reuse, or free it. Lock held. */
static KCTL__SMALL_CALL32 void kctl__fifo_item_put(kctl_fifo *f, kctl__fitem *it) {
    if (f->npool < KCTL__FIFO_POOL) {
        it->next = f->pool;
        f->pool = it;
        f->npool++;
    } else {
        kctl__free(&f->allocator, it->deltas);
        kctl__free(&f->allocator, it);
    }
}

/* Queue it at the tail. Lock held. */
static void kctl__fifo_link(kctl_fifo *f, kctl__fitem *it) {
    it->next = NULL;
    if (f->tail) f->tail->next = it;
    else f->head = it;
    f->tail = it;
}

/* client-go's queueActionLocked: append a delta (taking a reference to
   obj), collapse two trailing deletions, queue the key if it is new.
   how: KCTL__FIFO_UNKNOWN (the delta's final_state_unknown), KCTL__FIFO_LISTED
   (the key is marked listed, replace's, once queued). */
#define KCTL__FIFO_UNKNOWN 1
#define KCTL__FIFO_LISTED 2
static int kctl__fifo_queue(kctl_fifo *f, const char *key, int type, kctl_obj *obj, int how) {
#if KCTL_SMALL
    kctl__fitem *it = kctl__fifo_find(f, key); /* a new item hashes its key again */
#else
    size_t len = kctl__strlen(key);
    uint32_t h = kctl__hash(key, len); /* once: the lookup's, and a new item's */
    kctl__fitem *it = (kctl__fitem *)kctl__map_find(&f->items, key, len, h);
#endif
    kctl_delta *d;
    bool fresh = false;
    if (!it) {
#if KCTL_SMALL
        size_t len = kctl__strlen(key);
#endif
        if (kctl__map_reserve(&f->items, &f->allocator) != KCTL_OK || !(it = kctl__fifo_item_new(f, len))) return KCTL_ERR_NOMEM;
        kctl__memcpy(it + 1, key, len + 1);
        it->node.key = (const char *)(it + 1);
        it->node.len = (uint32_t)len;
#if KCTL_SMALL
        it->node.hash = kctl__hash(key, len);
#else
        it->node.hash = h;
#endif
        fresh = true;
    }
    if (type == KCTL_DELTA_DELETED && it->n && (d = &it->deltas[it->n - 1])->type == KCTL_DELTA_DELETED) {
        /* two deletions in a row are one: the one that says more, the
           newer unless it is the tombstone (a fresh item has no deltas) */
        kctl_obj *o;
        if (how & KCTL__FIFO_UNKNOWN) return KCTL_OK;
        o = kctl_obj_ref(obj);
        kctl_obj_unref(d->obj);
        d->obj = o;
        d->final_state_unknown = false;
        return KCTL_OK;
    }
    if (it->n == it->cap) {
        uint32_t cap = it->cap ? it->cap * 2 : 2;
        kctl_delta *nd = (kctl_delta *)kctl__alloc(&f->allocator, cap * sizeof *nd);
        if (!nd) {
            if (fresh) kctl__fifo_item_put(f, it);
            return KCTL_ERR_NOMEM;
        }
        if (it->n) kctl__memcpy(nd, it->deltas, it->n * sizeof *nd);
        kctl__free(&f->allocator, it->deltas);
        it->deltas = nd;
        it->cap = cap;
    }
    d = &it->deltas[it->n++];
    d->type = type;
    d->obj = kctl_obj_ref(obj);
    d->final_state_unknown = (how & KCTL__FIFO_UNKNOWN) != 0;
    if (how & KCTL__FIFO_LISTED) it->listed = true;
    if (fresh) {
        kctl__map_insert(&f->items, &it->node);
        kctl__fifo_link(f, it);
        if (f->waiters) kctl__cond_signal(&f->cv);
    }
    return KCTL_OK;
}

KCTL_API int kctl_fifo_create(const kctl_fifo_desc *desc, kctl_fifo **out) {
    kctl_fifo *f;
    if (!out) return KCTL_ERR_INVALID_ARG;
    *out = NULL;
    if (desc && (!desc->allocator.alloc_fn) != (!desc->allocator.free_fn)) return KCTL_ERR_INVALID_ARG;
    if (!(f = (kctl_fifo *)kctl__alloc(desc ? &desc->allocator : NULL, sizeof *f))) return KCTL_ERR_NOMEM;
    memset(f, 0, sizeof *f);
    if (desc) {
        f->allocator = desc->allocator;
        f->known = desc->known;
    }
    if (kctl__mutex_init(&f->mu) != KCTL_OK) {
        kctl__free(&f->allocator, f);
        return KCTL_ERR_NOMEM;
    }
    if (kctl__cond_init(&f->cv) != KCTL_OK) {
        kctl__mutex_deinit(&f->mu);
        kctl__free(&f->allocator, f);
        return KCTL_ERR_NOMEM;
    }
    *out = f;
    return KCTL_OK;
}

KCTL_API void kctl_fifo_destroy(kctl_fifo *f) {
    kctl__fitem *it, *n;
    if (!f) return;
    for (it = f->head; it; it = n) {
        n = it->next;
        kctl__fifo_free_item(f, it);
    }
    for (it = f->pool; it; it = n) {
        n = it->next;
        kctl__fifo_free_item(f, it);
    }
    kctl__free(&f->allocator, f->items.slots);
    kctl__cond_deinit(&f->cv);
    kctl__mutex_deinit(&f->mu);
    kctl__free(&f->allocator, f);
}

/* Queue a delta of type (ADDED, UPDATED, DELETED) for obj: the reflector's
   one call per event. A deletion of a key known neither here nor to the
   known objects queues nothing. */
static int kctl__fifo_write(kctl_fifo *f, kctl_obj *obj, int type) {
    const char *key;
    int rc = KCTL_OK;
    if (!f || !obj) return KCTL_ERR_INVALID_ARG;
    key = kctl_obj_key(obj);
    kctl__mutex_lock(&f->mu);
    if (f->closed) rc = KCTL_ERR_SHUTDOWN;
    else {
        bool exists = type != KCTL_DELTA_DELETED || kctl__fifo_find(f, key);
        f->populated = true;
        if (!exists && f->known) {
            kctl_obj *k = kctl_indexer_get(f->known, key);
            exists = k != NULL;
            kctl_obj_unref(k);
        }
        if (exists) rc = kctl__fifo_queue(f, key, type, obj, 0);
    }
    kctl__mutex_unlock(&f->mu);
    return rc;
}

KCTL_API int kctl_fifo_add(kctl_fifo *f, kctl_obj *obj) { return kctl__fifo_write(f, obj, KCTL_DELTA_ADDED); }
KCTL_API int kctl_fifo_update(kctl_fifo *f, kctl_obj *obj) { return kctl__fifo_write(f, obj, KCTL_DELTA_UPDATED); }
KCTL_API int kctl_fifo_delete(kctl_fifo *f, kctl_obj *obj) { return kctl__fifo_write(f, obj, KCTL_DELTA_DELETED); }

/* A delta of type for a known object whose key has none queued (the
   known objects' walk of replace and resync). Lock held. */
typedef struct kctl__fifoknown {
    kctl_fifo *f;
    int type;
} kctl__fifoknown;

static int kctl__fifo_known(kctl_obj *obj, void *ctx) {
    const kctl__fifoknown *k = (const kctl__fifoknown *)ctx;
    const char *key = kctl_obj_key(obj);
    if (kctl__fifo_find(k->f, key)) return KCTL_OK; /* deltas are queued: they will tell */
    return kctl__fifo_queue(k->f, key, k->type, obj, k->type == KCTL_DELTA_DELETED ? KCTL__FIFO_UNKNOWN : 0);
}

KCTL_API int kctl_fifo_replace(kctl_fifo *f, kctl_obj *const *objs, size_t n) {
    kctl__fifoknown k;
    size_t i;
    bool first;
    int rc = KCTL_OK;
    if (!f || (n && !objs)) return KCTL_ERR_INVALID_ARG;
    for (i = 0; i < n; i++)
        if (!objs[i]) return KCTL_ERR_INVALID_ARG;
    kctl__mutex_lock(&f->mu);
    if (f->closed) {
        kctl__mutex_unlock(&f->mu);
        return KCTL_ERR_SHUTDOWN;
    }
    first = !f->populated;
    for (i = 0; i < n && rc == KCTL_OK; i++) /* every listed key is queued, and marked */
        rc = kctl__fifo_queue(f, kctl_obj_key(objs[i]), KCTL_DELTA_REPLACED, objs[i], KCTL__FIFO_LISTED);
    /* queued keys not listed: deleted while we were not watching */
    for (i = 0; i < f->items.cap && rc == KCTL_OK; i++) {
        kctl__fitem *it = (kctl__fitem *)f->items.slots[i].node;
        if (it && !it->listed) rc = kctl__fifo_queue(f, it->node.key, KCTL_DELTA_DELETED, it->deltas[it->n - 1].obj, KCTL__FIFO_UNKNOWN);
    }
    /* known keys not queued (so not listed): likewise */
    k.f = f;
    k.type = KCTL_DELTA_DELETED;
    if (f->known && rc == KCTL_OK) rc = kctl__ix_each(f->known, kctl__fifo_known, &k);
    /* the marks off; has_synced waits for every key the first replace
       queued (a partial one, NOMEM, does not populate: the next replace does) */
    for (i = 0; i < f->items.cap; i++) {
        kctl__fitem *it = (kctl__fitem *)f->items.slots[i].node;
        if (!it) continue;
        it->listed = false;
        if (first && !it->initial) {
            it->initial = true;
            f->initial++;
        }
    }
    if (first && rc == KCTL_OK) f->populated = true;
    kctl__mutex_unlock(&f->mu);
    return rc;
}

KCTL_API int kctl_fifo_resync(kctl_fifo *f) {
    kctl__fifoknown k;
    int rc = KCTL_OK;
    if (!f) return KCTL_ERR_INVALID_ARG;
    k.f = f;
    k.type = KCTL_DELTA_SYNC;
    kctl__mutex_lock(&f->mu);
    if (f->closed) rc = KCTL_ERR_SHUTDOWN;
    else if (f->known) rc = kctl__ix_each(f->known, kctl__fifo_known, &k);
    kctl__mutex_unlock(&f->mu);
    return rc;
}

static int kctl__fifo_pop(kctl_fifo *f, kctl_fifo_process_fn fn, void *user_data, bool block) {
    kctl__fitem *it;
    int rc;
    if (!f || !fn) return KCTL_ERR_INVALID_ARG;
#ifdef KCTL_NO_THREADS
    block = false;
#endif
    kctl__mutex_lock(&f->mu);
    while (!f->head) {
        if (f->closed || !block) {
            kctl__mutex_unlock(&f->mu);
            return f->closed ? KCTL_ERR_SHUTDOWN : KCTL_ERR_AGAIN;
        }
        f->waiters++;
        kctl__cond_wait(&f->cv, &f->mu);
        f->waiters--;
    }
    it = f->head;
    f->head = it->next;
    if (!f->head) f->tail = NULL;
    it->next = NULL;
    /* The item stays in the map while fn runs: nothing can queue to the key
       meanwhile (the lock is held), and a requeue needs no allocation. */
    rc = fn(it->node.key, it->deltas, it->n, user_data);
    if (rc == KCTL_ERR_AGAIN) { /* back at the end */
        kctl__fifo_link(f, it);
        it = NULL;
        rc = KCTL_OK;
    } else {
        kctl__map_remove(&f->items, &f->allocator, &it->node);
        if (it->initial) f->initial--; /* a key put back (AGAIN) still counts */
    }
    kctl__mutex_unlock(&f->mu);
    if (it) { /* its references go outside the lock; the item back to the pool */
        uint32_t i;
        for (i = 0; i < it->n; i++) kctl_obj_unref(it->deltas[i].obj);
        it->n = 0;
        kctl__mutex_lock(&f->mu);
        kctl__fifo_item_put(f, it);
        kctl__mutex_unlock(&f->mu);
    }
    return rc == KCTL_ERR_AGAIN ? KCTL_OK : rc;
}

KCTL_API int kctl_fifo_pop(kctl_fifo *f, kctl_fifo_process_fn fn, void *user_data) { return kctl__fifo_pop(f, fn, user_data, true); }
KCTL_API int kctl_fifo_try_pop(kctl_fifo *f, kctl_fifo_process_fn fn, void *user_data) { return kctl__fifo_pop(f, fn, user_data, false); }

KCTL_API bool kctl_fifo_has_synced(kctl_fifo *f) {
    bool s;
    if (!f) return false;
    kctl__mutex_lock(&f->mu);
    s = f->populated && f->initial == 0;
    kctl__mutex_unlock(&f->mu);
    return s;
}

KCTL_API size_t kctl_fifo_len(kctl_fifo *f) {
    size_t n;
    if (!f) return 0;
    kctl__mutex_lock(&f->mu);
    n = f->items.count;
    kctl__mutex_unlock(&f->mu);
    return n;
}

KCTL_API void kctl_fifo_close(kctl_fifo *f) {
    if (!f) return;
    kctl__mutex_lock(&f->mu);
    f->closed = true;
    kctl__cond_broadcast(&f->cv);
    kctl__mutex_unlock(&f->mu);
}

/* -------------------------------------------------- >>transport TRANSPORT */
/* A growable writer used as a byte buffer: printf into it (the rules'
   refusals: unused under KCTL_NO_VALIDATION). */
static KCTL__UNUSED KCTL__PRINTF(2, 3) void kctl__bprintf(kctl_jw *w, const char *fmt, ...) {
    char small[256], *big;
    va_list ap;
    int n;
    if (w->err) return;
    va_start(ap, fmt);
    n = kctl__vfmt(small, sizeof small, fmt, ap);
    va_end(ap);
    if (n < 0) { w->err = KCTL_ERR_INVALID_ARG; return; }
    if ((size_t)n < sizeof small) { kctl__jw_put(w, small, (size_t)n); return; }
    if (!(big = (char *)kctl__alloc(&w->allocator, (size_t)n + 1))) { w->err = KCTL_ERR_NOMEM; return; }
    va_start(ap, fmt);
    kctl__vfmt(big, (size_t)n + 1, fmt, ap);
    va_end(ap);
    kctl__jw_put(w, big, (size_t)n);
    kctl__free(&w->allocator, big);
}

/* A parsed document whose tokens come from an allocator. */
typedef struct kctl__jdoc {
    kctl_json j;
    kctl_json_tok *toks;
    kctl_allocator a;
} kctl__jdoc;

/* Parse text into tokens of its own (kctl__jdoc_free frees them, whatever
   the result). */
#define KCTL__JDOC_GUESS_MAX 16384
static int kctl__jdoc_parse(kctl__jdoc *d, const char *text, size_t len, const kctl_allocator *a, const kctl_json_limits *lim) {
    int rc;
    memset(d, 0, sizeof *d);
    if (a) d->a = *a;
    if (!KCTL_SMALL && text && len <= KCTL__JDOC_GUESS_MAX) { /* small: one pass into room for a token every 4 bytes, mostly enough
                                                                  (small builds: always counted first) */
        uint32_t cap = (uint32_t)(len / 4 + 16);
        d->toks = (kctl_json_tok *)kctl__alloc(&d->a, (size_t)cap * sizeof *d->toks);
        if (d->toks && (rc = kctl_json_parse(text, len, d->toks, cap, lim, &d->j)) != KCTL_ERR_FULL) return rc;
        kctl__free(&d->a, d->toks); /* too few, or no memory for so many: the exact count */
        d->toks = NULL;
    }
    if ((rc = kctl_json_parse(text, len, NULL, 0, lim, &d->j)) != KCTL_OK) return rc;
    if (!(d->toks = (kctl_json_tok *)kctl__alloc(&d->a, (size_t)d->j.ntoks * sizeof *d->toks))) return KCTL_ERR_NOMEM;
    return kctl_json_parse(text, len, d->toks, d->j.ntoks, lim, &d->j);
}

static void kctl__jdoc_free(kctl__jdoc *d) {
    kctl__free(&d->a, d->toks);
    d->toks = NULL;
}

KCTL_API void kctl_event_clear(kctl_event *ev) {
    if (!ev) return;
    kctl_obj_unref(ev->obj);
    memset(ev, 0, sizeof *ev);
}

KCTL_API void kctl_list_result_free(kctl_list_result *r) {
    if (!r) return;
    kctl_obj_list_free(&r->items);
    r->resource_version[0] = r->continue_token[0] = '\0';
}

/* ---- the Status detail of a failed call */
KCTL_API void kctl_api_status_clear(kctl_api_status *st) {
    kctl_allocator a;
    if (!st) return;
    a = st->allocator;
    kctl__free(&a, st->mem_);
    memset(st, 0, sizeof *st);
    st->allocator = a;
}

/* Where the strings a Status holds are: a cause's reason, message and
   field, then the Status's reason, message, name, group and kind. */
static const unsigned char kctl__st_off[8] = {
    offsetof(kctl_status_cause, reason), offsetof(kctl_status_cause, message), offsetof(kctl_status_cause, field),
    offsetof(kctl_api_status, reason), offsetof(kctl_api_status, message), offsetof(kctl_api_status, name),
    offsetof(kctl_api_status, group), offsetof(kctl_api_status, kind) };

/* The bytes the k strings at rec + off[0..k) take with their NULs (NULL:
   ""); with p, each is copied to *p (the string pointer then points at
   its copy) and *p moves past it. */
static size_t kctl__st_strs(char *rec, const unsigned char *off, size_t k, char **p) {
    size_t total = 0, i, len;
    for (i = 0; i < k; i++) {
        const char **f = (const char **)(void *)(rec + off[i]), *s = *f;
        len = s ? kctl__strlen(s) : 0;
        total += len + 1;
        if (!p) continue;
        if (len) kctl__memcpy(*p, s, len);
        (*p)[len] = '\0';
        *f = *p;
        *p += len + 1;
    }
    return total;
}

KCTL_API int kctl_api_status_set(kctl_api_status *st, int code, const char *reason, const char *message,
                                 const char *name, const char *group, const char *kind,
                                 const kctl_status_cause *causes, size_t n) {
    size_t total, i;
    char *block, *p;
    kctl_status_cause *cs;
    void *old;
    if (!st || (n && !causes) || n > SIZE_MAX / 4 / sizeof *cs) return KCTL_ERR_INVALID_ARG;
    /* the strings where their copies go (the causes' in cs, once it is
       there), read and then replaced in place by kctl__st_strs: one walk
       for the size, one for the copies */
    st->reason = reason;
    st->message = message;
    st->name = name;
    st->group = group;
    st->kind = kind;
    total = n * sizeof *cs + kctl__st_strs((char *)st, kctl__st_off + 3, 5, NULL);
    for (i = 0; i < n; i++) total += kctl__st_strs((char *)(uintptr_t)&causes[i], kctl__st_off, 3, NULL);
    old = st->mem_; /* freed after the copy: the new strings may come from the old block */
    block = (char *)kctl__alloc(&st->allocator, total);
    if (!block) {
        kctl_api_status_clear(st); /* (frees the old block) */
        st->code = code;
        return KCTL_ERR_NOMEM;
    }
    cs = (kctl_status_cause *)(void *)block;
    if (n) kctl__memcpy(cs, causes, n * sizeof *cs);
    p = block + n * sizeof *cs;
    for (i = 0; i < n; i++) kctl__st_strs((char *)&cs[i], kctl__st_off, 3, &p);
    kctl__st_strs((char *)st, kctl__st_off + 3, 5, &p);
    st->causes = n ? cs : NULL;
    st->cause_count = n;
    st->code = code;
    st->retry_after_s = 0;
    st->mem_ = block;
    kctl__free(&st->allocator, old);
    return KCTL_OK;
}

/* ---- the client-side write budget (GCRA: tat is when the budget is
   wholly spent again; a write passes while tat - now <= (burst-1) * interval) */
struct kctl_write_budget {
    kctl_transport inner;
    uint64_t interval, slack; /* slack: (burst - 1) * interval */
    kctl_clock clock;
    kctl_allocator allocator;
    kctl__mutex mu;
    uint64_t tat, passed, refused;
};

/* OK when a write may pass now (it is counted); AGAIN, with the Status
   of a 429, when not. */
static int kctl__wb_take(kctl_write_budget *b, kctl_api_status *st) {
    uint64_t now = kctl_clock_now(&b->clock), wait = 0;
    kctl__mutex_lock(&b->mu);
    if (b->tat < now) b->tat = now;
    if (b->tat - now > b->slack) {
        wait = b->tat - now - b->slack;
        b->refused++;
    } else {
        b->tat += b->interval;
        b->passed++;
    }
    kctl__mutex_unlock(&b->mu);
    if (!wait) return KCTL_OK;
    if (st) {
        static const char spent[] = "the client-side write budget is spent"; /* (an array: see kctl__st_k_status) */
        kctl_api_status_set(st, 429, "TooManyRequests", spent, NULL, NULL, NULL, NULL, 0);
        st->retry_after_s = (uint32_t)((wait + KCTL_SEC(1) - 1) / KCTL_SEC(1));
    }
    return KCTL_ERR_AGAIN;
}

static int kctl__wb_list(void *self, const kctl_resource *res, const kctl_list_opts *opts, kctl_list_result *out, kctl_api_status *st) {
    return kctl_transport_list(&((kctl_write_budget *)self)->inner, res, opts, out, st);
}
static int kctl__wb_watch_open(void *self, const kctl_resource *res, const kctl_list_opts *opts, const char *from_rv, kctl_watch **out,
                               kctl_api_status *st) {
    return kctl_transport_watch_open(&((kctl_write_budget *)self)->inner, res, opts, from_rv, out, st);
}
static int kctl__wb_watch_next(void *self, kctl_watch *w, uint64_t timeout_ns, kctl_event *ev, kctl_api_status *st) {
    return kctl_transport_watch_next(&((kctl_write_budget *)self)->inner, w, timeout_ns, ev, st);
}
static void kctl__wb_watch_close(void *self, kctl_watch *w) { kctl_transport_watch_close(&((kctl_write_budget *)self)->inner, w); }
static int kctl__wb_get(void *self, const kctl_resource *res, const char *name, kctl_obj **out, kctl_api_status *st) {
    return kctl_transport_get(&((kctl_write_budget *)self)->inner, res, name, out, st);
}
static int kctl__wb_create(void *self, const kctl_resource *res, const char *json, size_t len, kctl_obj **out, kctl_api_status *st) {
    kctl_write_budget *b = (kctl_write_budget *)self;
    int rc = kctl__wb_take(b, st);
    return rc != KCTL_OK ? rc : kctl_transport_create(&b->inner, res, json, len, out, st);
}
static int kctl__wb_update(void *self, const kctl_resource *res, const char *json, size_t len, kctl_obj **out, kctl_api_status *st) {
    kctl_write_budget *b = (kctl_write_budget *)self;
    int rc = kctl__wb_take(b, st);
    return rc != KCTL_OK ? rc : kctl_transport_update(&b->inner, res, json, len, out, st);
}
static int kctl__wb_update_status(void *self, const kctl_resource *res, const char *json, size_t len, kctl_obj **out,
                                  kctl_api_status *st) {
    kctl_write_budget *b = (kctl_write_budget *)self;
    int rc = kctl__wb_take(b, st);
    return rc != KCTL_OK ? rc : kctl_transport_update_status(&b->inner, res, json, len, out, st);
}
static int kctl__wb_patch(void *self, const kctl_resource *res, const char *name, const char *patch, size_t len, unsigned flags,
                          kctl_obj **out, kctl_api_status *st) {
    kctl_write_budget *b = (kctl_write_budget *)self;
    int rc = kctl__wb_take(b, st);
    return rc != KCTL_OK ? rc : kctl_transport_patch(&b->inner, res, name, patch, len, flags, out, st);
}
static int kctl__wb_remove(void *self, const kctl_resource *res, const char *name, const kctl_delete_opts *opts, kctl_obj **out,
                           kctl_api_status *st) {
    kctl_write_budget *b = (kctl_write_budget *)self;
    int rc = kctl__wb_take(b, st);
    return rc != KCTL_OK ? rc : kctl_transport_remove(&b->inner, res, name, opts, out, st);
}

static int kctl__wb_watch_notify(void *self, kctl_watch *w, const kctl_wake *wake) {
    return kctl_transport_watch_notify(&((kctl_write_budget *)self)->inner, w, wake);
}

static const kctl_transport_vtable kctl__wb_vt = {
    kctl__wb_list, kctl__wb_watch_open, kctl__wb_watch_next, kctl__wb_watch_close, kctl__wb_get,  kctl__wb_create,
    kctl__wb_update, kctl__wb_update_status, kctl__wb_patch, kctl__wb_remove, NULL, kctl__wb_watch_notify
};

KCTL_API int kctl_write_budget_create(const kctl_write_budget_desc *desc, kctl_write_budget **out) {
    kctl_write_budget *b;
    uint32_t burst;
    if (out) *out = NULL;
    if (!out || !desc || !desc->inner.vt || !desc->interval_ns || (!desc->allocator.alloc_fn) != (!desc->allocator.free_fn))
        return KCTL_ERR_INVALID_ARG;
    burst = desc->burst ? desc->burst : 1;
    if ((uint64_t)(burst - 1) > UINT64_MAX / desc->interval_ns) return KCTL_ERR_INVALID_ARG;
    if (!(b = (kctl_write_budget *)kctl__alloc(&desc->allocator, sizeof *b))) return KCTL_ERR_NOMEM;
    memset(b, 0, sizeof *b);
    b->inner = desc->inner;
    b->interval = desc->interval_ns;
    b->slack = (uint64_t)(burst - 1) * desc->interval_ns;
    b->clock = desc->clock.now_fn ? desc->clock : kctl_clock_monotonic();
    b->allocator = desc->allocator;
    if (kctl__mutex_init(&b->mu) != KCTL_OK) {
        kctl__free(&b->allocator, b);
        return KCTL_ERR_NOMEM;
    }
    *out = b;
    return KCTL_OK;
}

KCTL_API kctl_transport kctl_write_budget_transport(kctl_write_budget *b) {
    kctl_transport t;
    t.vt = b ? &kctl__wb_vt : NULL;
    t.self = b;
    return t;
}

KCTL_API void kctl_write_budget_read_stats(kctl_write_budget *b, uint64_t *passed, uint64_t *refused) {
    if (passed) *passed = 0;
    if (refused) *refused = 0;
    if (!b) return;
    kctl__mutex_lock(&b->mu);
    if (passed) *passed = b->passed;
    if (refused) *refused = b->refused;
    kctl__mutex_unlock(&b->mu);
}

KCTL_API void kctl_write_budget_destroy(kctl_write_budget *b) {
    kctl_allocator a;
    if (!b) return;
    a = b->allocator;
    kctl__mutex_deinit(&b->mu);
    kctl__free(&a, b);
}

/* The string at v unescaped into the scratch at *p (*left bytes left);
   v absent or not a string: "". */
static const char *kctl__st_take(const kctl_json *j, uint32_t v, char **p, size_t *left) {
    size_t n = 0;
    char *d = *p;
    if (kctl_json_type_of(j, v) != KCTL_JSON_STRING || kctl_json_string(j, v, d, *left, &n) != KCTL_OK) return "";
    *p += n + 1;
    *left -= n + 1;
    return d;
}

/* The Status document's names of its own, as arrays rather than
   literals: GCC keeps a function's literals together, and one that code
   linked anyway also uses keeps them all, even where the function that
   owns them is not linked. Arrays go with the functions that use them
   (kctl_api_status_parse, kctl_api_status_write). */
static const char kctl__st_k_status[] = "Status", kctl__st_k_failure[] = "Failure", kctl__st_k_details[] = "details",
                  kctl__st_k_causes[] = "causes", kctl__st_k_field[] = "field", kctl__st_k_retry[] = "retryAfterSeconds",
                  kctl__st_k_code[] = "code";

KCTL_API int kctl_api_status_parse(kctl_api_status *st, const char *json, size_t len, int http_code) {
    kctl__jdoc d;
    kctl_status_cause *causes = NULL;
    uint32_t details, list, kind, v, i, k, n = 0;
    char *scratch = NULL, *p;
    size_t left;
    int64_t code = 0;
    int rc;
    if (!st || !json) return KCTL_ERR_INVALID_ARG;
    if (len == KCTL_NTS) len = kctl__strlen(json);
    if ((rc = kctl__jdoc_parse(&d, json, len, &st->allocator, NULL)) != KCTL_OK) {
        kctl__jdoc_free(&d);
        return rc == KCTL_ERR_NOMEM ? rc : KCTL_ERR_INVALID_ARG;
    }
    kind = kctl_json_member(&d.j, 0, "kind");
    if (kctl_json_type_of(&d.j, 0) != KCTL_JSON_OBJECT || (kind != KCTL_JSON_NONE && !kctl_json_string_eq(&d.j, kind, kctl__st_k_status)) ||
        (kind == KCTL_JSON_NONE && kctl_json_member(&d.j, 0, kctl__st_k_code) == KCTL_JSON_NONE && kctl_json_member(&d.j, 0, "reason") == KCTL_JSON_NONE)) {
        kctl__jdoc_free(&d);
        return KCTL_ERR_INVALID_ARG;
    }
    details = kctl_json_member(&d.j, 0, kctl__st_k_details);
    if (kctl_json_type_of(&d.j, details) != KCTL_JSON_OBJECT) details = KCTL_JSON_NONE;
    list = details != KCTL_JSON_NONE ? kctl_json_member(&d.j, details, kctl__st_k_causes) : KCTL_JSON_NONE;
    if (kctl_json_type_of(&d.j, list) == KCTL_JSON_ARRAY) n = d.j.toks[list].size;
    /* every string of the document fits in its length, unescaped */
    left = len + 8 + 3 * (size_t)n;
    scratch = (char *)kctl__alloc(&st->allocator, left);
    if (n) causes = (kctl_status_cause *)kctl__alloc(&st->allocator, (size_t)n * sizeof *causes);
    if (!scratch || (n && !causes)) {
        rc = KCTL_ERR_NOMEM;
    } else {
        p = scratch;
        for (i = 0, v = list + 1; i < n; i++, v += d.j.toks[v].skip) {
            causes[i].reason = kctl__st_take(&d.j, kctl_json_member(&d.j, v, "reason"), &p, &left);
            causes[i].message = kctl__st_take(&d.j, kctl_json_member(&d.j, v, "message"), &p, &left);
            causes[i].field = kctl__st_take(&d.j, kctl_json_member(&d.j, v, kctl__st_k_field), &p, &left);
        }
        k = kctl_json_member(&d.j, 0, kctl__st_k_code);
        if (kctl_json_type_of(&d.j, k) != KCTL_JSON_NUMBER || kctl_json_int64(&d.j, k, &code) != KCTL_OK || code <= 0 || code > 999)
            code = http_code;
        {
            const char *reason = kctl__st_take(&d.j, kctl_json_member(&d.j, 0, "reason"), &p, &left);
            const char *message = kctl__st_take(&d.j, kctl_json_member(&d.j, 0, "message"), &p, &left);
            const char *name = details != KCTL_JSON_NONE ? kctl__st_take(&d.j, kctl_json_member(&d.j, details, "name"), &p, &left) : "";
            const char *group = details != KCTL_JSON_NONE ? kctl__st_take(&d.j, kctl_json_member(&d.j, details, "group"), &p, &left) : "";
            const char *dkind = details != KCTL_JSON_NONE ? kctl__st_take(&d.j, kctl_json_member(&d.j, details, "kind"), &p, &left) : "";
            rc = kctl_api_status_set(st, (int)code, reason, message, name, group, dkind, causes, n);
        }
        if (rc == KCTL_OK && details != KCTL_JSON_NONE) {
            int64_t ra = 0;
            k = kctl_json_member(&d.j, details, kctl__st_k_retry);
            if (kctl_json_int64(&d.j, k, &ra) == KCTL_OK && ra > 0) st->retry_after_s = ra > UINT32_MAX ? UINT32_MAX : (uint32_t)ra;
        }
    }
    kctl__free(&st->allocator, causes);
    kctl__free(&st->allocator, scratch);
    kctl__jdoc_free(&d);
    return rc;
}

KCTL_API void kctl_api_status_write(const kctl_api_status *st, kctl_jw *w) {
    size_t i;
    bool details;
    if (!st || !w) return;
    details = (st->name && *st->name) || (st->group && *st->group) || (st->kind && *st->kind) || st->cause_count ||
              st->retry_after_s;
    kctl_jw_object_begin(w);
    kctl_jw_key(w, "kind");
    kctl_jw_string(w, kctl__st_k_status);
    kctl_jw_key(w, "apiVersion");
    kctl_jw_string(w, "v1");
    kctl_jw_key(w, "metadata");
    kctl_jw_object_begin(w);
    kctl_jw_object_end(w);
    kctl_jw_key(w, "status");
    kctl_jw_string(w, kctl__st_k_failure);
    if (st->message && *st->message) { kctl_jw_key(w, "message"); kctl_jw_string(w, st->message); }
    if (st->reason && *st->reason) { kctl_jw_key(w, "reason"); kctl_jw_string(w, st->reason); }
    if (details) {
        kctl_jw_key(w, kctl__st_k_details);
        kctl_jw_object_begin(w);
        if (st->name && *st->name) { kctl_jw_key(w, "name"); kctl_jw_string(w, st->name); }
        if (st->group && *st->group) { kctl_jw_key(w, "group"); kctl_jw_string(w, st->group); }
        if (st->kind && *st->kind) { kctl_jw_key(w, "kind"); kctl_jw_string(w, st->kind); }
        if (st->cause_count) {
            kctl_jw_key(w, kctl__st_k_causes);
            kctl_jw_array_begin(w);
            for (i = 0; i < st->cause_count; i++) {
                const kctl_status_cause *c = &st->causes[i];
                kctl_jw_object_begin(w);
                if (*c->reason) { kctl_jw_key(w, "reason"); kctl_jw_string(w, c->reason); }
                if (*c->message) { kctl_jw_key(w, "message"); kctl_jw_string(w, c->message); }
                if (*c->field) { kctl_jw_key(w, kctl__st_k_field); kctl_jw_string(w, c->field); }
                kctl_jw_object_end(w);
            }
            kctl_jw_array_end(w);
        }
        if (st->retry_after_s) { kctl_jw_key(w, kctl__st_k_retry); kctl_jw_uint64(w, st->retry_after_s); }
        kctl_jw_object_end(w);
    }
    kctl_jw_key(w, kctl__st_k_code);
    kctl_jw_int64(w, st->code);
    kctl_jw_object_end(w);
}

KCTL_API int kctl_api_status_result(int http_code, const char *reason) {
    /* HTTP codes less 400 (401 ... 504), and their results */
    static const unsigned char code[10] = { 1, 3, 4, 8, 104, 9, 10, 13, 29, 103 };
    static const signed char result[10] = { KCTL_ERR_UNAUTHORIZED, KCTL_ERR_FORBIDDEN, KCTL_ERR_NOT_FOUND, KCTL_ERR_TIMEOUT,
                                            KCTL_ERR_TIMEOUT, KCTL_ERR_CONFLICT, KCTL_ERR_GONE, KCTL_ERR_TOO_LARGE,
                                            KCTL_ERR_AGAIN, KCTL_ERR_AGAIN };
    int i;
    if (http_code >= 200 && http_code < 300) return KCTL_OK;
    for (i = 0; i < 10; i++) {
        if (http_code - 400 != code[i]) continue;
        if (http_code == 409 && reason && kctl__strcmp(reason, "AlreadyExists") == 0) return KCTL_ERR_EXISTS;
        return result[i];
    }
    return http_code >= 500 ? KCTL_ERR_IO : KCTL_ERR_INVALID_ARG;
}

/* ---- the wrappers */
static KCTL__SMALL_INLINE32 bool kctl__tp_ok(const kctl_transport *t, const kctl_resource *res) {
    return t && t->vt && res && res->resource && *res->resource;
}

KCTL_API int kctl_transport_list(const kctl_transport *t, const kctl_resource *res, const kctl_list_opts *opts,
                                 kctl_list_result *out, kctl_api_status *st) {
    if (out) memset(out, 0, sizeof *out);
    if (!out || !kctl__tp_ok(t, res) || !t->vt->list) return KCTL_ERR_INVALID_ARG;
    return t->vt->list(t->self, res, opts, out, st);
}

KCTL_API int kctl_transport_watch_open(const kctl_transport *t, const kctl_resource *res, const kctl_list_opts *opts,
                                       const char *from_rv, kctl_watch **out, kctl_api_status *st) {
    if (out) *out = NULL;
    if (!out || !kctl__tp_ok(t, res) || !t->vt->watch_open) return KCTL_ERR_INVALID_ARG;
    return t->vt->watch_open(t->self, res, opts, from_rv, out, st);
}

KCTL_API int kctl_transport_watch_next(const kctl_transport *t, kctl_watch *w, uint64_t timeout_ns, kctl_event *ev,
                                       kctl_api_status *st) {
    if (ev) memset(ev, 0, sizeof *ev);
    if (!t || !t->vt || !t->vt->watch_next || !w || !ev) return KCTL_ERR_INVALID_ARG;
    return t->vt->watch_next(t->self, w, timeout_ns, ev, st);
}

KCTL_API void kctl_transport_watch_close(const kctl_transport *t, kctl_watch *w) {
    if (t && t->vt && t->vt->watch_close && w) t->vt->watch_close(t->self, w);
}

KCTL_API int kctl_transport_watch_notify(const kctl_transport *t, kctl_watch *w, const kctl_wake *wake) {
    if (!t || !t->vt || !t->vt->watch_notify || !w || !wake || !wake->fn) return KCTL_ERR_INVALID_ARG;
    return t->vt->watch_notify(t->self, w, wake);
}

KCTL_API int kctl_transport_get(const kctl_transport *t, const kctl_resource *res, const char *name, kctl_obj **out,
                                kctl_api_status *st) {
    if (out) *out = NULL;
    if (!out || !kctl__tp_ok(t, res) || !name || !*name || !t->vt->get) return KCTL_ERR_INVALID_ARG;
    return t->vt->get(t->self, res, name, out, st);
}

typedef int (*kctl__tp_write_fn)(void *, const kctl_resource *, const char *, size_t, kctl_obj **, kctl_api_status *);
static int kctl__tp_write(const kctl_transport *t, kctl__tp_write_fn fn, const kctl_resource *res, const char *json,
                          size_t len, kctl_obj **out, kctl_api_status *st) {
    if (out) *out = NULL;
    if (!kctl__tp_ok(t, res) || !json || !fn) return KCTL_ERR_INVALID_ARG;
    if (len == KCTL_NTS) len = kctl__strlen(json);
    return fn(t->self, res, json, len, out, st);
}

KCTL_API int kctl_transport_create(const kctl_transport *t, const kctl_resource *res, const char *json, size_t len,
                                   kctl_obj **out, kctl_api_status *st) {
    return kctl__tp_write(t, t && t->vt ? t->vt->create : NULL, res, json, len, out, st);
}

KCTL_API int kctl_transport_update(const kctl_transport *t, const kctl_resource *res, const char *json, size_t len,
                                   kctl_obj **out, kctl_api_status *st) {
    return kctl__tp_write(t, t && t->vt ? t->vt->update : NULL, res, json, len, out, st);
}

KCTL_API int kctl_transport_update_status(const kctl_transport *t, const kctl_resource *res, const char *json, size_t len,
                                          kctl_obj **out, kctl_api_status *st) {
    return kctl__tp_write(t, t && t->vt ? t->vt->update_status : NULL, res, json, len, out, st);
}

/* A merge patch done by hand: get, merge, update with the version read. */
static int kctl__tp_patch_by_update(const kctl_transport *t, const kctl_resource *res, const char *name, const char *patch,
                                    size_t len, unsigned flags, kctl_obj **out, kctl_api_status *st) {
    kctl_obj *cur = NULL;
    kctl__jdoc pd, cd;
    kctl_jw w;
    kctl_allocator a;
    const char *doc, *text;
    size_t dlen, n;
    int rc = t->vt->get(t->self, res, name, &cur, st);
    if (rc != KCTL_OK) return rc;
    a = kctl__obj_allocator(cur); /* scratch from the allocator of the object read */
    doc = kctl_obj_json(cur, &dlen);
    if ((rc = kctl__jdoc_parse(&pd, patch, len, &a, NULL)) != KCTL_OK) {
        static const char bad[] = "the patch is not valid JSON"; /* (an array: see kctl__st_k_status) */
        kctl__jdoc_free(&pd);
        kctl_obj_unref(cur);
        if (rc == KCTL_ERR_NOMEM) return rc;
        if (st) kctl_api_status_set(st, 400, "BadRequest", bad, NULL, NULL, NULL, NULL, 0);
        return KCTL_ERR_INVALID_ARG;
    }
    if ((rc = kctl__jdoc_parse(&cd, doc, dlen, &a, NULL)) == KCTL_OK) {
        kctl_jw_init_growable(&w, &a);
        rc = kctl_json_merge_patch(&cd.j, 0, &pd.j, 0, &w);
        if (rc == KCTL_OK) rc = kctl_jw_finish(&w, &text, &n);
        if (rc == KCTL_OK)
            rc = (flags & KCTL_PATCH_STATUS ? t->vt->update_status : t->vt->update)(t->self, res, text, n, out, st);
        kctl_jw_free(&w);
    }
    kctl__jdoc_free(&cd);
    kctl__jdoc_free(&pd);
    kctl_obj_unref(cur);
    return rc;
}

KCTL_API int kctl_transport_patch(const kctl_transport *t, const kctl_resource *res, const char *name, const char *patch,
                                  size_t len, unsigned flags, kctl_obj **out, kctl_api_status *st) {
    if (out) *out = NULL;
    if (!kctl__tp_ok(t, res) || !name || !*name || !patch || (flags & ~KCTL_PATCH_STATUS)) return KCTL_ERR_INVALID_ARG;
    if (len == KCTL_NTS) len = kctl__strlen(patch);
    if (t->vt->patch) return t->vt->patch(t->self, res, name, patch, len, flags, out, st);
    if (!t->vt->get || !t->vt->update || !t->vt->update_status) return KCTL_ERR_INVALID_ARG;
    return kctl__tp_patch_by_update(t, res, name, patch, len, flags, out, st);
}

KCTL_API int kctl_transport_remove(const kctl_transport *t, const kctl_resource *res, const char *name,
                                   const kctl_delete_opts *opts, kctl_obj **out, kctl_api_status *st) {
    if (out) *out = NULL;
    if (!kctl__tp_ok(t, res) || !name || !*name || !t->vt->remove) return KCTL_ERR_INVALID_ARG;
    return t->vt->remove(t->self, res, name, opts, out, st);
}

KCTL_API void kctl_transport_destroy(kctl_transport *t) {
    if (t && t->vt && t->vt->destroy) t->vt->destroy(t->self);
    if (t) memset(t, 0, sizeof *t);
}

/* ---- helpers over the wrappers */
KCTL_API int kctl_status_update(const kctl_transport *t, const kctl_resource *res, const kctl_obj *obj,
                                const char *status, size_t len, bool *written, kctl_obj **out, kctl_api_status *st) {
    kctl_resource in_ns;
    kctl__jdoc cur, want;
    kctl_allocator a;
    kctl_jw w;
    const char *text, *doc, *ns;
    size_t n, dlen;
    int rc;
    if (written) *written = false;
    if (out) *out = NULL;
    if (!t || !t->vt || !res || !obj || !status) return KCTL_ERR_INVALID_ARG;
    if (len == KCTL_NTS) len = kctl__strlen(status);
    ns = kctl_obj_namespace(obj);
    in_ns = *res;
    if (!in_ns.ns || !*in_ns.ns) in_ns.ns = ns; /* the object's own namespace (an all-namespaces resource) */
    res = &in_ns;
    a = kctl__obj_allocator(obj); /* scratch from the object's allocator */
    doc = kctl_obj_json(obj, &dlen);
    memset(&cur, 0, sizeof cur);
    rc = kctl__jdoc_parse(&want, status, len, &a, NULL);
    if (rc == KCTL_ERR_PROTO) rc = KCTL_ERR_INVALID_ARG;
    if (rc == KCTL_OK) rc = kctl__jdoc_parse(&cur, doc, dlen, &a, NULL);
    if (rc != KCTL_OK || kctl__jequal(&cur.j, kctl_json_member(&cur.j, 0, "status"), &want.j, 0, &a)) /* else nothing to write */
        goto done;
    kctl_jw_init_growable(&w, &a);
    kctl_jw_object_begin(&w);
    kctl_jw_key(&w, "metadata");
    kctl_jw_object_begin(&w);
    kctl_jw_key(&w, "name");
    kctl_jw_string(&w, kctl_obj_name(obj));
    if (*ns) { kctl_jw_key(&w, "namespace"); kctl_jw_string(&w, ns); }
    kctl_jw_key(&w, "resourceVersion");
    kctl_jw_string(&w, kctl_obj_resource_version(obj));
    kctl_jw_object_end(&w);
    kctl_jw_key(&w, "status");
    kctl_jw_value(&w, &want.j, 0);
    kctl_jw_object_end(&w);
    rc = kctl_jw_finish(&w, &text, &n);
    if (rc == KCTL_OK) /* what kctl_transport_update_status would check of what is not checked above */
        rc = kctl__tp_ok(t, res) && t->vt->update_status ? t->vt->update_status(t->self, res, text, n, out, st) : KCTL_ERR_INVALID_ARG;
    if (rc == KCTL_OK && written) *written = true;
    kctl_jw_free(&w);
done:
    kctl__jdoc_free(&want);
    kctl__jdoc_free(&cur);
    return rc;
}

KCTL_API int kctl_retry_on_conflict(uint32_t attempts, uint64_t delay_ns, int (*fn)(void *user_data), void *user_data) {
    uint32_t i;
    int rc = KCTL_ERR_INVALID_ARG;
    if (!fn) return rc;
    if (!attempts) attempts = 5;
    if (!delay_ns) delay_ns = KCTL_MS(10);
    for (i = 0; i < attempts; i++) {
        if ((rc = fn(user_data)) != KCTL_ERR_CONFLICT) return rc;
#ifndef KCTL_NO_THREADS
        if (i + 1 < attempts) kctl__port_sleep_ns(delay_ns);
#endif
    }
    return rc;
}

/* ---------------------------------------------- >>apisrv API-SERVER RULES */
#define KCTL__AS_ANNOTATIONS_MAX (256u * 1024u)

KCTL_API void kctl_apisrv_now(char buf[32]) {
#if KCTL_SMALL
    /* (small builds: whole seconds of the clock's ns, which reach the year
       2554 at most: nothing to clamp, one 64-bit division; the day count
       of sec < 2^35 in 32 bits, as 86400 = 2^7 * 675) */
    uint64_t sec = kctl__udiv64(kctl__port_wall_ns(), 1000000000u, NULL);
    uint32_t day = (uint32_t)(sec >> 7) / 675u;
    kctl__time_write(day + 719528u, (uint32_t)sec - day * 86400u, 0, false, buf); /* 719528: 0000-01-01 to 1970-01-01 */
#else
    kctl__time_format((int64_t)kctl__udiv64(kctl__port_wall_ns(), 1000u, NULL), false, buf);
#endif
}

#ifndef KCTL_NO_VALIDATION
#define KCTL__AS_WHY(text) text
/* The words below are apimachinery's (k8s.io/apimachinery validation and
   the generic registry), so a kctl store refuses as an API server does. */
#define KCTL__AS_SUBDOMAIN_MSG "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', " \
    "and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is " \
    "'[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')"
#define KCTL__AS_LABEL_MSG "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must " \
    "start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for validation is " \
    "'[a-z0-9]([-a-z0-9]*[a-z0-9])?')"
#define KCTL__AS_QNAME_RULE "must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an " \
    "alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is " \
    "'([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')"
#define KCTL__AS_VALUE_MSG "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', " \
    "and must start and end with an alphanumeric character (e.g. 'MyValue',  or 'my_value',  or '12345', regex used " \
    "for validation is '(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')"
#define KCTL__AS_MODIFIED "the object has been modified; please apply your changes to the latest version and try again"

/* Field errors gathered while a document is checked: per cause three
   NUL-terminated strings (reason, message, field) in one buffer. */
typedef struct kctl__aserr {
    kctl_jw text;
    size_t *off;
    size_t n, cap;
    size_t dropped;  /* causes past KCTL__AS_CAUSES_MAX, counted only */
    size_t mark;     /* where the cause being dropped began */
    bool dropping;
} kctl__aserr;

/* A refusal's detail stays small whatever the document: at most this many
   causes (the rest counted in the message), values quoted up to
   KCTL__AS_QUOTE_MAX bytes. (An API server lists them all; a device cannot
   afford a Status larger than the document.) */
#define KCTL__AS_CAUSES_MAX 64
#define KCTL__AS_QUOTE_MAX 256

static void kctl__as_err_init(kctl__aserr *e, const kctl_allocator *a) {
    memset(e, 0, sizeof *e);
    kctl_jw_init_growable(&e->text, a);
}

static void kctl__as_err_free(kctl__aserr *e) {
    kctl__free(&e->text.allocator, e->off);
    kctl_jw_free(&e->text);
}

/* Go's %q of s[0..n): quotes, backslash escapes for quotes, backslashes
   and control bytes. */
static void kctl__as_quote(kctl_jw *b, const char *s, size_t n) {
    size_t i, run = 0;
    bool cut = n > KCTL__AS_QUOTE_MAX;
    if (cut) { /* at a character's start */
        n = KCTL__AS_QUOTE_MAX;
        while (n > 0 && ((unsigned char)s[n] & 0xc0) == 0x80) n--;
    }
    kctl__jw_put(b, "\"", 1);
    for (i = 0; i < n; i++) {
        unsigned char c = (unsigned char)s[i];
        const char *esc = NULL;
        char hex[5];
        if (c >= 0x20 && c != 0x7f && c != '"' && c != '\\') continue;
        kctl__jw_put(b, s + run, i - run);
        switch (c) {
        case '"': esc = "\\\""; break;
        case '\\': esc = "\\\\"; break;
        case '\a': esc = "\\a"; break;
        case '\b': esc = "\\b"; break;
        case '\f': esc = "\\f"; break;
        case '\n': esc = "\\n"; break;
        case '\r': esc = "\\r"; break;
        case '\t': esc = "\\t"; break;
        case '\v': esc = "\\v"; break;
        default: kctl__fmt(hex, sizeof hex, "\\x%02x", c); esc = hex;
        }
        kctl__jw_put(b, esc, kctl__strlen(esc));
        run = i + 1;
    }
    kctl__jw_put(b, s + run, n - run);
    if (cut) kctl__jw_put(b, "...", 3);
    kctl__jw_put(b, "\"", 1);
}

/* Start a cause: its reason, then the message is written by the caller,
   then kctl__as_err_end adds the field. Past KCTL__AS_CAUSES_MAX the
   cause is written, then taken back and counted. */
static void kctl__as_err_begin(kctl__aserr *e, const char *reason) {
    if (e->text.err) return;
    if (e->n >= KCTL__AS_CAUSES_MAX) {
        e->dropping = true;
        e->mark = e->text.len;
        return;
    }
    if (e->n == e->cap) {
        size_t cap = e->cap ? e->cap * 2 : 8, *no;
        if (cap > SIZE_MAX / (3 * sizeof *no) || !(no = (size_t *)kctl__alloc(&e->text.allocator, cap * 3 * sizeof *no))) {
            e->text.err = KCTL_ERR_NOMEM;
            return;
        }
        if (e->n) kctl__memcpy(no, e->off, e->n * 3 * sizeof *no);
        kctl__free(&e->text.allocator, e->off);
        e->off = no;
        e->cap = cap;
    }
    e->off[3 * e->n] = e->text.len;
    kctl__jw_put(&e->text, reason, kctl__strlen(reason) + 1);
    e->off[3 * e->n + 1] = e->text.len;
}

static void kctl__as_err_end(kctl__aserr *e, const char *field) {
    if (e->text.err) return;
    if (e->dropping) {
        e->text.len = e->mark;
        if (e->text.buf) e->text.buf[e->mark] = '\0';
        e->dropping = false;
        e->dropped++;
        return;
    }
    kctl__jw_put(&e->text, "", 1);
    e->off[3 * e->n + 2] = e->text.len;
    kctl__jw_put(&e->text, field, kctl__strlen(field) + 1);
    if (!e->text.err) e->n++;
}

/* "Invalid value: <value quoted>: <detail>" at field. */
static void kctl__as_invalid(kctl__aserr *e, const char *field, const char *value, size_t n, const char *detail) {
    kctl__as_err_begin(e, "FieldValueInvalid");
    kctl__bprintf(&e->text, "Invalid value: ");
    kctl__as_quote(&e->text, value, n);
    kctl__bprintf(&e->text, ": %s", detail);
    kctl__as_err_end(e, field);
}

static void kctl__as_required(kctl__aserr *e, const char *field, const char *detail) {
    kctl__as_err_begin(e, "FieldValueRequired");
    kctl__bprintf(&e->text, "Required value: %s", detail);
    kctl__as_err_end(e, field);
}

/* apimachinery's IsDNS1123Subdomain / IsDNS1123Label, as causes at field. */
static void kctl__as_check_dns(kctl__aserr *e, const char *field, const char *v, size_t n, bool label, bool prefix) {
    size_t max = label ? 63 : 253, m = n;
    char masked[256];
    const char *check = v;
    if (prefix && n > 1 && v[n - 1] == '-') { /* a generateName: Go's maskTrailingDash, name[:len-2] + "a" */
        m = n - 1;
        if (m <= max) {
            kctl__memcpy(masked, v, m - 1);
            masked[m - 1] = 'a';
            check = masked;
        }
    }
    if (m > max) {
        char why[48];
        kctl__fmt(why, sizeof why, "must be no more than %u characters", (unsigned)max);
        kctl__as_invalid(e, field, v, n, why);
    }
    if (!(label ? kctl__name_dns_label(check, m) : kctl__name_dns_subdomain(check, m)))
        kctl__as_invalid(e, field, v, n, label ? KCTL__AS_LABEL_MSG : KCTL__AS_SUBDOMAIN_MSG);
}

/* apimachinery's IsQualifiedName of v, as causes at field quoting shown
   (the value as sent: v may be a lowercased copy). */
static void kctl__as_check_qname_as(kctl__aserr *e, const char *field, const char *v, size_t n, const char *shown) {
    const char *slash = (const char *)kctl__memchr(v, '/', n), *name = v;
    size_t nn = n;
    if (slash) {
        size_t pl = (size_t)(slash - v);
        if (kctl__memchr(slash + 1, '/', n - pl - 1)) {
            kctl__as_invalid(e, field, shown, n, "a qualified name " KCTL__AS_QNAME_RULE
                             " with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')");
            return;
        }
        if (pl == 0) {
            kctl__as_invalid(e, field, shown, n, "prefix part must be non-empty");
        } else {
            if (pl > 253) kctl__as_invalid(e, field, shown, n, "prefix part must be no more than 253 characters");
            if (!kctl__name_dns_subdomain(v, pl)) kctl__as_invalid(e, field, shown, n, "prefix part " KCTL__AS_SUBDOMAIN_MSG);
        }
        name = slash + 1;
        nn = n - pl - 1;
    }
    if (nn == 0) kctl__as_invalid(e, field, shown, n, "name part must be non-empty");
    else if (nn > 63) kctl__as_invalid(e, field, shown, n, "name part must be no more than 63 characters");
    if (!kctl__name_qpart(name, nn)) kctl__as_invalid(e, field, shown, n, "name part " KCTL__AS_QNAME_RULE);
}

static void kctl__as_check_qname(kctl__aserr *e, const char *field, const char *v, size_t n) {
    kctl__as_check_qname_as(e, field, v, n, v);
}

/* IsValidLabelValue */
static void kctl__as_check_label_value(kctl__aserr *e, const char *v, size_t n) {
    if (n > 63) kctl__as_invalid(e, "metadata.labels", v, n, "must be no more than 63 characters");
    if (n && !kctl__name_qpart(v, n)) kctl__as_invalid(e, "metadata.labels", v, n, KCTL__AS_VALUE_MSG);
}

/* "resource.group" (or "resource") for NotFound, AlreadyExists, Conflict */
static void kctl__as_gr(kctl_jw *b, const kctl_resource *res) {
    kctl__bprintf(b, "%s", res->resource);
    if (res->group && *res->group) kctl__bprintf(b, ".%s", res->group);
}

/* Fill st as code/reason with the message built in b (and b's error). */
static int kctl__as_status(kctl_api_status *st, kctl_jw *b, int code, const char *reason, const kctl_resource *res,
                           const char *name, const char *kind, const kctl__aserr *e) {
    kctl_status_cause *cs = NULL;
    size_t i, n = e ? e->n : 0;
    int rc = kctl_api_status_result(code, reason);
    if (!st) return rc;
    if (b->err) return b->err;
    if (n && !(cs = (kctl_status_cause *)kctl__alloc(&b->allocator, n * sizeof *cs))) return KCTL_ERR_NOMEM;
    for (i = 0; i < n; i++) {
        cs[i].reason = e->text.buf + e->off[3 * i];
        cs[i].message = e->text.buf + e->off[3 * i + 1];
        cs[i].field = e->text.buf + e->off[3 * i + 2];
    }
    if (kctl_api_status_set(st, code, reason, b->buf ? b->buf : "", name, res && res->group ? res->group : "", kind, cs, n) != KCTL_OK)
        rc = KCTL_ERR_NOMEM;
    kctl__free(&b->allocator, cs);
    return rc;
}

static int kctl__as_simple(kctl_api_status *st, const kctl_allocator *a, int code, const char *reason, const char *message) {
    kctl_jw b;
    int rc;
    if (!st) return kctl_api_status_result(code, reason); /* no words to write */
    kctl_jw_init_growable(&b, a);
    kctl__bprintf(&b, "%s", message);
    rc = kctl__as_status(st, &b, code, reason, NULL, NULL, NULL, NULL);
    kctl_jw_free(&b);
    return rc;
}

KCTL_API int kctl_apisrv_refuse(int code, const kctl_resource *res, const char *name, kctl_api_status *st) {
    kctl_jw b;
    int http = 0, rc;
    const char *reason = "";
    if (!st || !res || !res->resource) return code;
    if (!name) name = "";
    kctl_jw_init_growable(&b, &st->allocator);
    switch (code) {
    case KCTL_ERR_EXISTS:
        http = 409; reason = "AlreadyExists";
        kctl__as_gr(&b, res);
        kctl__bprintf(&b, " ");
        kctl__as_quote(&b, name, kctl__strlen(name));
        kctl__bprintf(&b, " already exists");
        break;
    case KCTL_ERR_NOT_FOUND:
        http = 404; reason = "NotFound";
        kctl__as_gr(&b, res);
        kctl__bprintf(&b, " ");
        kctl__as_quote(&b, name, kctl__strlen(name));
        kctl__bprintf(&b, " not found");
        break;
    case KCTL_ERR_CONFLICT:
        http = 409; reason = "Conflict";
        kctl__bprintf(&b, "Operation cannot be fulfilled on ");
        kctl__as_gr(&b, res);
        kctl__bprintf(&b, " ");
        kctl__as_quote(&b, name, kctl__strlen(name));
        kctl__bprintf(&b, ": " KCTL__AS_MODIFIED);
        break;
    case KCTL_ERR_GONE:
        http = 410; reason = "Expired";
        kctl__bprintf(&b, "too old resource version");
        break;
    default:
        kctl_jw_free(&b);
        return code;
    }
    rc = kctl__as_status(st, &b, http, reason, res, name, res->resource, NULL);
    kctl_jw_free(&b);
    return rc == KCTL_ERR_NOMEM ? rc : code;
}

/* 422 Invalid with e's causes: "<Kind>.<group> "<name>" is invalid: <causes>". */
static int kctl__as_refuse_invalid(kctl_api_status *st, const kctl_allocator *a, const kctl_resource *res,
                                   const char *kind, const char *name, const kctl__aserr *e) {
    kctl_jw b;
    size_t i;
    int rc;
    kctl_jw_init_growable(&b, a);
    kctl__bprintf(&b, "%s", kind);
    if (res->group && *res->group) kctl__bprintf(&b, ".%s", res->group);
    kctl__bprintf(&b, " ");
    kctl__as_quote(&b, name, kctl__strlen(name));
    kctl__bprintf(&b, " is invalid: %s", e->n > 1 ? "[" : "");
    for (i = 0; i < e->n; i++)
        kctl__bprintf(&b, "%s%s: %s", i ? ", " : "", e->text.buf + e->off[3 * i + 2], e->text.buf + e->off[3 * i + 1]);
    if (e->dropped) kctl__bprintf(&b, ", and %lu more", (unsigned long)e->dropped);
    if (e->n > 1) kctl__bprintf(&b, "]");
    rc = kctl__as_status(st, &b, 422, "Invalid", res, name, kind, e);
    kctl_jw_free(&b);
    return rc;
}
#else /* KCTL_NO_VALIDATION: no format checks, refusals without words */
#define KCTL__AS_WHY(text) ""

/* Fill st (may be NULL) with a refusal's http code and reason and its
   details res, name, kind (each may be NULL): no message, no causes.
   The result code for http and reason, or NOMEM. */
static int kctl__as_bare(kctl_api_status *st, int http, const char *reason, const kctl_resource *res, const char *name,
                         const char *kind) {
    if (st && kctl_api_status_set(st, http, reason, NULL, name, res ? res->group : NULL, kind, NULL, 0) != KCTL_OK)
        return KCTL_ERR_NOMEM;
    return kctl_api_status_result(http, reason);
}
/* the worded refusals below, without their words */
#define kctl__as_simple(st, a, code, reason, message) kctl__as_bare((st), (code), (reason), NULL, NULL, NULL)
#define kctl__as_invalid_bare(st, res, kind, name) kctl__as_bare((st), 422, "Invalid", (res), (name), (kind))

KCTL_API int kctl_apisrv_refuse(int code, const kctl_resource *res, const char *name, kctl_api_status *st) {
    int http = 409;
    const char *reason = "Conflict";
    if (!st || !res || !res->resource) return code;
    switch (code) {
    case KCTL_ERR_EXISTS: reason = "AlreadyExists"; break;
    case KCTL_ERR_NOT_FOUND: http = 404; reason = "NotFound"; break;
    case KCTL_ERR_CONFLICT: break;
    case KCTL_ERR_GONE: http = 410; reason = "Expired"; break;
    default: return code;
    }
    return kctl__as_bare(st, http, reason, res, name ? name : "", res->resource) == KCTL_ERR_NOMEM ? KCTL_ERR_NOMEM : code;
}

/* What a store's keys need of a name or namespace the validation would
   have checked (n bytes, at most max; a valid one always passes): no '/',
   '|', space, control byte or DEL (a NUL is refused when the document is
   read), so that no two objects share a key and every stored object can
   be looked up again. */
static bool kctl__as_key_safe(const char *s, size_t n, size_t max) {
    size_t i;
    if (n > max) return false;
    for (i = 0; i < n; i++)
        if ((unsigned char)s[i] <= ' ' || s[i] == '/' || s[i] == '|' || s[i] == 0x7f) return false;
    return true;
}
#endif /* KCTL_NO_VALIDATION */

/* ---- reading the sent document */
/* A metadata string member: absent or null is "" (as an API server
   reads it); a string is unescaped into the scratch. Anything else, or a
   NUL inside: false. */
typedef struct kctl__asstr {
    char *buf;
    size_t used, cap;
} kctl__asstr;

static bool kctl__as_str(kctl__asstr *sc, const kctl_json *j, uint32_t v, const char **s, size_t *n) {
    kctl_json_type t = kctl_json_type_of(j, v);
    size_t len = 0;
    *s = "";
    if (n) *n = 0;
    if (t == KCTL_JSON_INVALID || t == KCTL_JSON_NULL) return true;
    if (t != KCTL_JSON_STRING) return false;
    if (kctl_json_string(j, v, sc->buf + sc->used, sc->cap - sc->used, &len) != KCTL_OK) return false;
    if (kctl__strlen(sc->buf + sc->used) != len) return false; /* a NUL inside */
    *s = sc->buf + sc->used;
    if (n) *n = len;
    sc->used += len + 1;
    return true;
}

#ifndef KCTL_NO_VALIDATION
/* The text of string v: as it stands when it has no escapes, else
   unescaped into the scratch (which has room for every string twice). */
static void kctl__as_text(kctl__asstr *sc, const kctl_json *j, uint32_t v, const char **s, size_t *n) {
    const kctl_json_tok *t = &j->toks[v];
    size_t len = 0;
    if (!t->escaped) {
        *s = j->text + t->start;
        *n = t->end - t->start;
        return;
    }
    kctl_json_string(j, v, sc->buf + sc->used, sc->cap - sc->used, &len);
    *s = sc->buf + sc->used;
    *n = len;
    sc->used += len + 1;
}
#endif /* !KCTL_NO_VALIDATION */

/* What the checks and the writer need of a sent document. */
typedef struct kctl__asin {
    const kctl_json *j;
    const char *name, *gen_name, *ns, *kind, *uid, *rv;
    size_t name_len, gen_len, ns_len;
#ifndef KCTL_NO_GENERATE_NAME
    char gen[80];                /* a generated name */
#endif
    int64_t generation;
    size_t nfinalizers;
    uint32_t mv[10];             /* metadata's members by KCTL__AM_* (the last of a name; KCTL_JSON_NONE: absent) */
} kctl__asin;

static int kctl__as_named(const kctl_json *j, uint32_t ktok, const char *const *names, const unsigned char *lens, int n, uint32_t mask);

/* The metadata members the rules read, found in one walk. */
enum { KCTL__AM_NAME, KCTL__AM_GEN_NAME, KCTL__AM_NS, KCTL__AM_UID, KCTL__AM_RV, KCTL__AM_GENERATION, KCTL__AM_LABELS,
       KCTL__AM_ANNOTATIONS, KCTL__AM_FINALIZERS, KCTL__AM_OWNERS };
static void kctl__as_md_scan(const kctl_json *j, uint32_t md, uint32_t mv[10]) {
    static const char *const names[10] = { "name", "generateName", "namespace", "uid", "resourceVersion", "generation",
                                           "labels", "annotations", "finalizers", "ownerReferences" };
    static const unsigned char lens[10] = { 4, 12, 9, 3, 15, 10, 6, 11, 10, 15 };
    uint32_t i, m, k;
#if KCTL_SMALL
    int c;
#endif
    for (k = 0; k < 10; k++) mv[k] = KCTL_JSON_NONE;
    for (i = md + 1, m = 0; m < j->toks[md].size; m++, i += 1 + j->toks[i + 1].skip)
#if KCTL_SMALL /* (small builds: the names compared as kctl__as_named does) */
        if ((c = kctl__as_named(j, i, names, lens, 10, 0)) >= 0) mv[c] = i + 1;
#else
        for (k = 0; k < 10; k++)
            if ((j->toks[i].escaped || j->toks[i].end - j->toks[i].start == lens[k]) && kctl__jkey_eq(j, &j->toks[i], names[k], lens[k])) {
                mv[k] = i + 1;
                break;
            }
#endif
}

/* Check the document's shape and read its metadata strings (md, kind:
   its members metadata and kind); a bad shape is 400 BadRequest (what it
   is says what was wrong). */
static const char *kctl__as_read(kctl__asin *in, kctl__asstr *sc, const kctl_json *j, uint32_t md, uint32_t kind) {
#if KCTL_SMALL
    /* the strings read first, by where they go in in: name, generateName,
       namespace (with their lengths), uid, resourceVersion (KCTL__AM_*
       0 to 4) and kind */
    static const unsigned char str_at[6] = { offsetof(kctl__asin, name), offsetof(kctl__asin, gen_name), offsetof(kctl__asin, ns),
                                             offsetof(kctl__asin, uid), offsetof(kctl__asin, rv), offsetof(kctl__asin, kind) };
    static const unsigned char len_at[3] = { offsetof(kctl__asin, name_len), offsetof(kctl__asin, gen_len), offsetof(kctl__asin, ns_len) };
#endif
#ifndef KCTL_NO_VALIDATION
    static const char *const str_why[6] = { "metadata.name must be a string without NUL", "metadata.generateName must be a string without NUL",
                                            "metadata.namespace must be a string without NUL", "metadata.uid must be a string without NUL",
                                            "metadata.resourceVersion must be a string", "kind must be a string" };
#define KCTL__AS_STR_WHY(k) str_why[k]
#else
#define KCTL__AS_STR_WHY(k) ""
#endif
    uint32_t v, i, k;
    kctl_json_type t;
    const char *dummy;
    memset(in, 0, sizeof *in);
    in->j = j;
#ifndef KCTL_NO_VALIDATION /* (without: a document that is no object has no metadata either (md NONE), refused alike below) */
    if (kctl_json_type_of(j, 0) != KCTL_JSON_OBJECT) return KCTL__AS_WHY("the object provided is not a JSON object");
#endif
    t = kctl_json_type_of(j, md);
    if (t != KCTL_JSON_OBJECT) return KCTL__AS_WHY("metadata must be an object");
    kctl__as_md_scan(j, md, in->mv);
#if KCTL_SMALL /* (small builds: in a loop; the others unrolled, the write's hot path) */
    for (k = 0; k < 6; k++)
        if (!kctl__as_str(sc, j, k < 5 ? in->mv[k] : kind, (const char **)(void *)((char *)in + str_at[k]),
                          k < 3 ? (size_t *)(void *)((char *)in + len_at[k]) : NULL))
            return KCTL__AS_STR_WHY(k);
#else
    if (!kctl__as_str(sc, j, in->mv[KCTL__AM_NAME], &in->name, &in->name_len)) return KCTL__AS_STR_WHY(0);
    if (!kctl__as_str(sc, j, in->mv[KCTL__AM_GEN_NAME], &in->gen_name, &in->gen_len)) return KCTL__AS_STR_WHY(1);
    if (!kctl__as_str(sc, j, in->mv[KCTL__AM_NS], &in->ns, &in->ns_len)) return KCTL__AS_STR_WHY(2);
    if (!kctl__as_str(sc, j, in->mv[KCTL__AM_UID], &in->uid, NULL)) return KCTL__AS_STR_WHY(3);
    if (!kctl__as_str(sc, j, in->mv[KCTL__AM_RV], &in->rv, NULL)) return KCTL__AS_STR_WHY(4);
    if (!kctl__as_str(sc, j, kind, &in->kind, NULL)) return KCTL__AS_STR_WHY(5);
#endif
#undef KCTL__AS_STR_WHY
    v = in->mv[KCTL__AM_GENERATION];
    t = kctl_json_type_of(j, v);
    if (t != KCTL_JSON_INVALID && t != KCTL_JSON_NULL && kctl_json_int64(j, v, &in->generation) != KCTL_OK)
        return KCTL__AS_WHY("metadata.generation must be an integer");
#ifndef KCTL_NO_VALIDATION /* (without: the store's object build refuses these shapes, PROTO) */
    { /* labels and annotations: maps of strings */
        size_t m;
        for (m = 0; m < 2; m++) {
            v = in->mv[KCTL__AM_LABELS + m];
            t = kctl_json_type_of(j, v);
            if (t == KCTL_JSON_INVALID || t == KCTL_JSON_NULL) continue;
            if (t != KCTL_JSON_OBJECT) return m ? KCTL__AS_WHY("metadata.annotations must be a map of strings") : KCTL__AS_WHY("metadata.labels must be a map of strings");
            if (j->toks[v].size > KCTL__OBJ_COUNT_MAX) return NULL; /* counted as too large by the caller */
            for (i = v + 1, k = 0; k < j->toks[v].size; k++, i += 1 + j->toks[i + 1].skip)
                if (kctl_json_type_of(j, i + 1) != KCTL_JSON_STRING || !kctl__as_str(sc, j, i, &dummy, NULL) ||
                    !kctl__as_str(sc, j, i + 1, &dummy, NULL))
                    return m ? KCTL__AS_WHY("metadata.annotations must be a map of strings without NUL")
                              : KCTL__AS_WHY("metadata.labels must be a map of strings without NUL");
        }
    }
#endif
    v = in->mv[KCTL__AM_FINALIZERS];
    t = kctl_json_type_of(j, v);
    if (t == KCTL_JSON_ARRAY) {
        for (i = v + 1, k = 0; k < j->toks[v].size; k++, i += j->toks[i].skip)
            if (kctl_json_type_of(j, i) != KCTL_JSON_STRING || !kctl__as_str(sc, j, i, &dummy, NULL))
                return KCTL__AS_WHY("metadata.finalizers must be an array of strings without NUL");
        in->nfinalizers = j->toks[v].size;
    } else if (t != KCTL_JSON_INVALID && t != KCTL_JSON_NULL) {
        return KCTL__AS_WHY("metadata.finalizers must be an array of strings");
    }
#ifndef KCTL_NO_VALIDATION
    v = in->mv[KCTL__AM_OWNERS];
    t = kctl_json_type_of(j, v);
    if (t == KCTL_JSON_ARRAY) {
        for (i = v + 1, k = 0; k < j->toks[v].size; k++, i += j->toks[i].skip) {
            static const char *const f[] = { "apiVersion", "kind", "name", "uid" };
            size_t m;
            uint32_t c;
            if (kctl_json_type_of(j, i) != KCTL_JSON_OBJECT) return KCTL__AS_WHY("metadata.ownerReferences must be an array of objects");
            for (m = 0; m < 4; m++)
                if (!kctl__as_str(sc, j, kctl_json_member(j, i, f[m]), &dummy, NULL))
                    return KCTL__AS_WHY("metadata.ownerReferences: apiVersion, kind, name and uid must be strings without NUL");
            c = kctl_json_member(j, i, "controller");
            t = kctl_json_type_of(j, c);
            if (t != KCTL_JSON_INVALID && t != KCTL_JSON_NULL && t != KCTL_JSON_TRUE && t != KCTL_JSON_FALSE)
                return KCTL__AS_WHY("metadata.ownerReferences: controller must be a boolean");
        }
    } else if (t != KCTL_JSON_INVALID && t != KCTL_JSON_NULL) {
        return KCTL__AS_WHY("metadata.ownerReferences must be an array");
    }
#endif
    return NULL;
}

#ifndef KCTL_NO_VALIDATION
/* The string value of a member (already checked to be a string), or "". */
static void kctl__as_member_str(kctl__asstr *sc, const kctl_json *j, uint32_t obj, const char *name, const char **s, size_t *n) {
    uint32_t v = kctl_json_member(j, obj, name);
    *s = "";
    *n = 0;
    if (kctl_json_type_of(j, v) == KCTL_JSON_STRING) kctl__as_text(sc, j, v, s, n);
}

/* The metadata checks of ValidateObjectMeta on the document, into e: the
   name and namespace when names is set (a create, or a stored object), the
   generation when stored is (a write sets it itself), generateName,
   labels, annotations, owner references and finalizers always, in
   apimachinery's order. */
static void kctl__as_validate(kctl__aserr *e, kctl__asstr *sc, const kctl__asin *in, bool names, bool stored) {
    const kctl_json *j = in->j;
    uint32_t v, i, k;
    size_t total = 0;
    if (in->gen_len) kctl__as_check_dns(e, "metadata.generateName", in->gen_name, in->gen_len, false, true);
    if (names) {
        if (!in->name || !in->name_len) kctl__as_required(e, "metadata.name", "name or generateName is required");
        else kctl__as_check_dns(e, "metadata.name", in->name, in->name_len, false, false);
        if (in->ns_len) kctl__as_check_dns(e, "metadata.namespace", in->ns, in->ns_len, true, false);
    }
    if (stored && in->generation < 0) {
        kctl__as_err_begin(e, "FieldValueInvalid");
        kctl__bprintf(&e->text, "Invalid value: %lld: must be greater than or equal to 0", (long long)in->generation);
        kctl__as_err_end(e, "metadata.generation");
    }
    v = in->mv[KCTL__AM_LABELS];
    if (kctl_json_type_of(j, v) == KCTL_JSON_OBJECT)
        for (i = v + 1, k = 0; k < j->toks[v].size; k++, i += 1 + j->toks[i + 1].skip) {
            const char *ks, *vs;
            size_t kn, vn;
            kctl__as_text(sc, j, i, &ks, &kn);
            kctl__as_text(sc, j, i + 1, &vs, &vn);
            kctl__as_check_qname(e, "metadata.labels", ks, kn);
            kctl__as_check_label_value(e, vs, vn);
        }
    v = in->mv[KCTL__AM_ANNOTATIONS];
    if (kctl_json_type_of(j, v) == KCTL_JSON_OBJECT)
        for (i = v + 1, k = 0; k < j->toks[v].size; k++, i += 1 + j->toks[i + 1].skip) {
            char low[320];
            const char *key, *val, *check;
            size_t n, vn, c;
            kctl__as_text(sc, j, i, &key, &n);
            kctl__as_text(sc, j, i + 1, &val, &vn);
            (void)val;
            check = key;
            if (n < sizeof low) { /* case does not matter for annotation keys: checked lowercased, quoted as sent */
                for (c = 0; c < n; c++) low[c] = (char)(key[c] >= 'A' && key[c] <= 'Z' ? key[c] - 'A' + 'a' : key[c]);
                check = low;
            }
            kctl__as_check_qname_as(e, "metadata.annotations", check, n, key);
            total += n + vn;
        }
    if (total > KCTL__AS_ANNOTATIONS_MAX) {
        kctl__as_err_begin(e, "FieldValueTooLong");
        kctl__bprintf(&e->text, "Too long: must have at most %u bytes", KCTL__AS_ANNOTATIONS_MAX);
        kctl__as_err_end(e, "metadata.annotations");
    }
    v = in->mv[KCTL__AM_OWNERS];
    if (kctl_json_type_of(j, v) == KCTL_JSON_ARRAY) {
        const char *fk = NULL, *fn = NULL; /* the first controller's kind and name */
        size_t fkn = 0, fnn = 0;
        for (i = v + 1, k = 0; k < j->toks[v].size; k++, i += j->toks[i].skip) {
            const char *av, *kind, *name, *uid, *slash;
            size_t avn, kn, nn, un;
            kctl__as_member_str(sc, j, i, "apiVersion", &av, &avn);
            kctl__as_member_str(sc, j, i, "kind", &kind, &kn);
            kctl__as_member_str(sc, j, i, "name", &name, &nn);
            kctl__as_member_str(sc, j, i, "uid", &uid, &un);
            slash = (const char *)kctl__memchr(av, '/', avn);
            if (!avn || (slash && (slash + 1 == av + avn || kctl__memchr(slash + 1, '/', (size_t)(av + avn - slash - 1)))))
                kctl__as_invalid(e, "metadata.ownerReferences.apiVersion", av, avn, "version must not be empty");
            if (!kn) kctl__as_invalid(e, "metadata.ownerReferences.kind", kind, kn, "kind must not be empty");
            if (!nn) kctl__as_invalid(e, "metadata.ownerReferences.name", name, nn, "name must not be empty");
            if (!un) kctl__as_invalid(e, "metadata.ownerReferences.uid", uid, un, "uid must not be empty");
            if (kctl_json_type_of(j, kctl_json_member(j, i, "controller")) != KCTL_JSON_TRUE) continue;
            if (!fk) {
                fk = kind; fkn = kn; fn = name; fnn = nn;
                continue;
            }
            /* kinds and names cut to 64 bytes here: each extra controller
               reference quotes the first, which must not make a refusal's
               detail grow with the square of the document */
            if (fkn > 64) fkn = 64;
            if (fnn > 64) fnn = 64;
            if (kn > 64) kn = 64;
            if (nn > 64) nn = 64;
            kctl__as_err_begin(e, "FieldValueInvalid");
            kctl__bprintf(&e->text, "Invalid value: \"%.*s/%.*s, %.*s/%.*s\": Only one reference can have Controller set to true. "
                          "Found \"true\" in references for %.*s/%.*s and %.*s/%.*s", (int)fkn, fk, (int)fnn, fn, (int)kn, kind,
                          (int)nn, name, (int)fkn, fk, (int)fnn, fn, (int)kn, kind, (int)nn, name);
            kctl__as_err_end(e, "metadata.ownerReferences");
        }
    }
    v = in->mv[KCTL__AM_FINALIZERS];
    if (kctl_json_type_of(j, v) == KCTL_JSON_ARRAY)
        for (i = v + 1, k = 0; k < j->toks[v].size; k++, i += j->toks[i].skip) {
            const char *f;
            size_t fn;
            kctl__as_text(sc, j, i, &f, &fn);
            kctl__as_check_qname(e, "metadata.finalizers", f, fn);
        }
}
#else
/* The metadata checks left under KCTL_NO_VALIDATION, those the store's
   keys need, of a create's or a stored object's name and namespace: false
   when the name is empty or either is not one a key can hold. */
static KCTL__SMALL_INLINE32 bool kctl__as_names_safe(const kctl__asin *in) {
    return in->name_len && kctl__as_key_safe(in->name, in->name_len, 253) &&
           kctl__as_key_safe(in->ns, in->ns_len, 63);
}
#endif /* KCTL_NO_VALIDATION */

/* ---- writing the stored document */
/* The metadata the server owns, written in place of whatever was sent. */
typedef struct kctl__asmeta {
    const char *name, *ns, *uid, *rv, *created, *deleted;
    int64_t generation;
    bool has_grace;
    int64_t grace;
    bool fin_kept;          /* the finalizers are fin of fin_doc (KCTL_JSON_NONE: none), not base's */
    const kctl_json *fin_doc;
    uint32_t fin;
    bool as_is;             /* base's metadata as it stands but for rv (written last, unless NULL), and its status
                               where it stands (kctl_apisrv_parse_at): nothing else of m counts */
} kctl__asmeta;

/* Whether member name ktok of j is one of the n names (lens: their
   lengths, below 32; mask: bit l set for each length l, which decides
   most names without a compare): its index, or -1. */
static int kctl__as_named(const kctl_json *j, uint32_t ktok, const char *const *names, const unsigned char *lens, int n, uint32_t mask) {
    const kctl_json_tok *t = &j->toks[ktok];
    uint32_t len = t->end - t->start;
    int i;
    if (t->type != KCTL_JSON_STRING || (!KCTL_SMALL && !t->escaped && (len > 31 || !(mask >> len & 1)))) return -1;
    if (KCTL_SMALL || t->escaped) { /* (small builds: every name compared) */
        for (i = 0; i < n; i++)
            if (kctl__jkey_eq(j, t, names[i], lens[i])) return i;
        return -1;
    }
    for (i = 0; i < n; i++) /* the length, the first byte, then the rest */
        if (len == lens[i] && j->text[t->start] == names[i][0] && kctl__memcmp(j->text + t->start, names[i], len) == 0) return i;
    return -1;
}

/* The member names the rules place themselves: the top level's as the
   emit orders them (apiVersion, kind, metadata, status), then from
   KCTL__AS_MANAGED the metadata the server owns, then finalizers (an
   apply may keep them). */
static const char *const kctl__as_names[] = { "apiVersion", "kind", "metadata", "status", "name", "namespace", "uid", "resourceVersion",
                                              "generation", "creationTimestamp", "deletionTimestamp", "deletionGracePeriodSeconds",
                                              "finalizers" };
static const unsigned char kctl__as_lens[] = { 10, 4, 8, 6, 4, 9, 3, 15, 10, 17, 17, 26, 10 };
#define KCTL__AS_MANAGED 4
#define KCTL__AS_MANAGED_MASK UINT32_C(0x4028618) /* bits 3, 4, 9, 10, 15, 17, 26 */

#if !KCTL_SMALL
/* Whether member name ktok of j is one of the nskip managed names from
   the first'th (the mask, of them all, only rules lengths out). */
static bool kctl__as_skip(const kctl_json *j, uint32_t ktok, int first, int nskip) {
    return nskip && kctl__as_named(j, ktok, kctl__as_names + KCTL__AS_MANAGED + first, kctl__as_lens + KCTL__AS_MANAGED + first, nskip,
                                   KCTL__AS_MANAGED_MASK) >= 0;
}
#endif

/* The tokens of the document an emit writes, recorded as it is written:
   what kctl_json_parse would make of it, without parsing it again (the
   store builds its object from them). Each token is placed as the parser
   places it (strings: start after the opening quote, end at the closing
   one; containers: size counts values, skip counts tokens). Containers
   deeper than KCTL__AST_DEPTH, or no memory, stop the recording (ok
   false): the caller parses the document instead. */
#define KCTL__AST_DEPTH 64
typedef struct kctl__astoks {
    kctl_json_tok *toks;
    uint32_t n, cap;
    uint32_t open[KCTL__AST_DEPTH]; /* open containers' tokens */
    uint32_t depth, max_depth;      /* open now; the most open at once */
    bool ok;
    kctl_allocator a;
} kctl__astoks;

static void kctl__at_init(kctl__astoks *t, const kctl_allocator *a) {
    memset(t, 0, sizeof *t);
    t->ok = true;
    if (a) t->a = *a;
}

static void kctl__at_free(kctl__astoks *t) {
    kctl__free(&t->a, t->toks);
    t->toks = NULL;
    t->n = t->cap = 0;
    t->ok = false;
}

/* A new token of type at [start, end) (a string's inner bytes) in t, not
   yet counted in its container; its index, or UINT32_MAX when recording stopped. */
static uint32_t kctl__at_add(kctl__astoks *t, uint8_t type, size_t start, size_t end) {
    kctl_json_tok *k;
    if (KCTL_SMALL || !t || !t->ok) return UINT32_MAX;
    if (t->n == t->cap) {
        uint32_t cap = t->cap ? t->cap * 2 : 64;
        kctl_json_tok *nt = cap > t->cap && cap < UINT32_MAX / 2 ? (kctl_json_tok *)kctl__alloc(&t->a, (size_t)cap * sizeof *nt) : NULL;
        if (!nt) { t->ok = false; return UINT32_MAX; }
        if (t->n) kctl__memcpy(nt, t->toks, (size_t)t->n * sizeof *nt);
        kctl__free(&t->a, t->toks);
        t->toks = nt;
        t->cap = cap;
    }
    k = &t->toks[t->n];
    memset(k, 0, sizeof *k);
    k->type = type;
    k->start = (uint32_t)start;
    k->end = (uint32_t)end;
    k->skip = 1;
    return t->n++;
}

/* A value begins: its container counts it. */
static void kctl__at_count(kctl__astoks *t) {
    if (!KCTL_SMALL && t && t->ok && t->depth) t->toks[t->open[t->depth - 1]].size++;
}

/* After kctl_jw_object_begin / array_begin wrote the bracket. */
static void kctl__at_open(kctl__astoks *t, const kctl_jw *w, bool obj) {
    uint32_t i;
    if (KCTL_SMALL || !t || !t->ok || w->err) return;
    kctl__at_count(t);
    if (t->depth == KCTL__AST_DEPTH) { t->ok = false; return; }
    if ((i = kctl__at_add(t, obj ? KCTL_JSON_OBJECT : KCTL_JSON_ARRAY, w->len - 1, 0)) == UINT32_MAX) return;
    t->open[t->depth++] = i;
    if (t->depth > t->max_depth) t->max_depth = t->depth;
}

/* After kctl_jw_object_end / array_end wrote the bracket. */
static void kctl__at_close(kctl__astoks *t, const kctl_jw *w) {
    uint32_t i;
    if (KCTL_SMALL || !t || !t->ok || w->err || !t->depth) return;
    i = t->open[--t->depth];
    t->toks[i].end = (uint32_t)w->len;
    t->toks[i].skip = t->n - i;
}

/* After a string of the writer's own: a member name (key: not counted,
   the colon after it) or a value, written from at (a comma may lead). */
static void kctl__at_string(kctl__astoks *t, const kctl_jw *w, size_t at, bool key) {
    size_t start, end;
    uint32_t i;
    if (KCTL_SMALL || !t || !t->ok || w->err) return;
    if (w->buf[at] == ',') at++;
    start = at + 1;
    end = w->len - (key ? 2 : 1);
    if (!key) kctl__at_count(t);
    if ((i = kctl__at_add(t, KCTL_JSON_STRING, start, end)) != UINT32_MAX)
        t->toks[i].escaped = kctl__memchr(w->buf + start, '\\', end - start) != NULL;
}

/* After token v of j (no container; a member name when key) was copied
   as it stands, its raw text ending the output (a colon after a name). */
static void kctl__at_copied(kctl__astoks *t, const kctl_jw *w, const kctl_json *j, uint32_t v, bool key) {
    const kctl_json_tok *src = &j->toks[v];
    size_t raw_start = src->start - (src->type == KCTL_JSON_STRING), raw_len = src->end + (src->type == KCTL_JSON_STRING) - raw_start;
    size_t at = w->len - (key ? 1 : 0) - raw_len;
    uint32_t i;
    if (KCTL_SMALL || !t || !t->ok || w->err) return;
    if (!key) kctl__at_count(t);
    if ((i = kctl__at_add(t, src->type, at + (src->start - raw_start), at + (src->end - raw_start))) != UINT32_MAX)
        t->toks[i].escaped = src->escaped;
}

/* Copy value v of j as a store keeps it: every object, however deep, with
   only the members that count (the last of repeated names), as an API
   server's decode and encode leave it; the rest as it stands. O(n log n). */
#if KCTL_SMALL
/* (small builds: kctl__as_copy_sel, which copies each member itself) */
static int kctl__as_copy_sel(kctl_jw *w, const kctl_json *j, uint32_t obj, const kctl_allocator *a, int first, int n, unsigned keep);
#define kctl__as_copy_members(w, t, j, obj, a, first, nskip) kctl__as_copy_sel((w), (j), (obj), (a), KCTL__AS_MANAGED + (first), (nskip), 1u)
#else
static int kctl__as_copy_members(kctl_jw *w, kctl__astoks *t, const kctl_json *j, uint32_t obj, const kctl_allocator *a,
                                 int first, int nskip);
#endif

/* Whether value v of j, its raw text from *pos, is what kctl__as_copy_value
   writes of it: nothing between its tokens but the commas, colons and
   brackets, no repeated member names (objects of more than
   KCTL__JSON_SCAN_MAX members: not looked at, no). *pos: past it; *depth:
   its containers' nesting. Stops at the first difference. */
static bool kctl__as_verbatim(const kctl_json *j, uint32_t v, uint32_t *pos, uint32_t *depth) {
    const kctl_json_tok *t = &j->toks[v];
    uint32_t q = t->type == KCTL_JSON_STRING, p, k, e, d = 0, sub;
    bool obj = t->type == KCTL_JSON_OBJECT;
    if (t->start - q != *pos) return false;
    *depth = 0;
    if (!obj && t->type != KCTL_JSON_ARRAY) {
        *pos = t->end + q;
        return true;
    }
    if (obj && t->size > KCTL__JSON_SCAN_MAX) return false;
    for (p = t->start + 1, k = 0, e = v + 1; k < t->size; k++) {
        if (k && j->text[p++] != ',') return false;
        if (obj) {
            if (!kctl__as_verbatim(j, e, &p, &sub) || j->text[p++] != ':' || !kctl__jlast(j, v, e)) return false;
            e++;
        }
        if (!kctl__as_verbatim(j, e, &p, &sub)) return false;
        if (sub > d) d = sub;
        e += j->toks[e].skip;
    }
    if (p + 1 != t->end) return false;
    *pos = t->end;
    *depth = d + 1;
    return true;
}

/* Value v of j (key not KCTL_JSON_NONE: with its member name, token
   v - 1, in an object whose next member is due) copied as it stands, when
   kctl__as_verbatim says that is its copy (and it is not too deep to
   write): its tokens recorded from j's, moved. False: nothing done, copy
   it piece by piece. */
static bool kctl__as_copy_verbatim(kctl_jw *w, kctl__astoks *t, const kctl_json *j, uint32_t key, uint32_t v) {
    const kctl_json_tok *s = &j->toks[key != KCTL_JSON_NONE ? key : v];
    uint32_t start = s->start - (s->type == KCTL_JSON_STRING), pos = start, depth, i, ntok = j->toks[v].skip + (key != KCTL_JSON_NONE);
    size_t n, at;
    uint8_t *st;
    if (key != KCTL_JSON_NONE && (!kctl__as_verbatim(j, key, &pos, &depth) || j->text[pos++] != ':')) return false;
    if (!kctl__as_verbatim(j, v, &pos, &depth) || w->depth + depth > KCTL_JSON_MAX_DEPTH || (t && t->depth + depth > KCTL__AST_DEPTH))
        return false;
    n = pos - start;
    if (key == KCTL_JSON_NONE) {
        if (!kctl__jw_value(w)) return true;
    } else { /* as kctl__jw_key_raw, then the value */
        st = &w->state[w->depth];
        if (w->err || w->depth == 0 || (*st & (KCTL__JW_OBJ | KCTL__JW_KEYED)) != KCTL__JW_OBJ) {
            if (!w->err) w->err = KCTL_ERR_INVALID_ARG;
            return true;
        }
        if (*st & KCTL__JW_ITEMS) kctl__jw_put(w, ",", 1);
        *st |= KCTL__JW_ITEMS;
    }
    if (w->err || ((w->cap == 0 || n >= w->cap - w->len) && !kctl__jw_grow(w, n))) return true;
    at = w->len;
    kctl__memcpy(w->buf + at, j->text + start, n);
    w->len += n;
    w->buf[w->len] = '\0';
    if (!t || !t->ok) return true;
    kctl__at_count(t);
    if (t->cap - t->n >= ntok) { /* room for them all: copied in place, their offsets moved */
        kctl_json_tok *d = &t->toks[t->n];
        uint32_t shift = (uint32_t)at - start;
        kctl__memcpy(d, s, (size_t)ntok * sizeof *d);
        for (i = 0; i < ntok; i++) {
            d[i].reserved_ = 0;
            d[i].start += shift; /* (modulo 2^32: exact, the offsets fit) */
            d[i].end += shift;
        }
        t->n += ntok;
        ntok = 0;
    }
    for (i = 0; i < ntok; i++) {
        const kctl_json_tok *src = &s[i];
        uint32_t k = kctl__at_add(t, src->type, src->start - start + at, src->end - start + at);
        if (k == UINT32_MAX) return true;
        t->toks[k].escaped = src->escaped;
        t->toks[k].size = src->size;
        t->toks[k].skip = src->skip;
    }
    if (t->depth + depth > t->max_depth) t->max_depth = t->depth + depth;
    return true;
}

/* t (may be NULL) records the tokens written. */
static int kctl__as_copy_value(kctl_jw *w, kctl__astoks *t, const kctl_json *j, uint32_t v, const kctl_allocator *a) {
    int rc = KCTL_OK;
    kctl_json_type type = kctl_json_type_of(j, v);
    if (!KCTL_SMALL && (type == KCTL_JSON_OBJECT || type == KCTL_JSON_ARRAY) && !w->err && kctl__as_copy_verbatim(w, t, j, KCTL_JSON_NONE, v))
        return w->err;
    switch (type) {
    case KCTL_JSON_OBJECT:
        kctl_jw_object_begin(w);
        kctl__at_open(t, w, true);
        rc = kctl__as_copy_members(w, t, j, v, a, 0, 0);
        kctl_jw_object_end(w);
        kctl__at_close(t, w);
        break;
    case KCTL_JSON_ARRAY: {
        uint32_t k, e = v + 1;
        kctl_jw_array_begin(w);
        kctl__at_open(t, w, false);
        for (k = 0; rc == KCTL_OK && k < j->toks[v].size; k++, e += j->toks[e].skip) rc = kctl__as_copy_value(w, t, j, e, a);
        kctl_jw_array_end(w);
        kctl__at_close(t, w);
        break;
    }
    default:
        kctl_jw_value(w, j, v);
        kctl__at_copied(t, w, j, v, false);
    }
    return rc != KCTL_OK ? rc : w->err;
}

#if KCTL_SMALL
/* The members of object obj of j that count whose place among the n
   names of kctl__as_names from the first'th (-1: none of them), plus
   one, has its bit set in keep (1: those not named), each name as it
   stands and its value as kctl__as_copy_value copies it. */
static int kctl__as_copy_sel(kctl_jw *w, const kctl_json *j, uint32_t obj, const kctl_allocator *a, int first, int n, unsigned keep) {
    kctl__jmview v;
    uint32_t i, k;
    const char *raw;
    size_t len;
    int rc = kctl__jmembers(j, obj, a, false, &v);
    for (i = 0; rc == KCTL_OK && i < v.n; i++) {
        k = v.keys[i];
        if (!(keep >> (kctl__as_named(j, k, kctl__as_names + first, kctl__as_lens + first, n, 0) + 1) & 1)) continue;
        raw = "";
        len = 0;
        kctl_json_raw(j, k, &raw, &len);
        kctl__jw_key_raw(w, raw, len);
        kctl__jw_put(w, ":", 1);
        rc = kctl__as_copy_value(w, NULL, j, k + 1, a);
    }
    kctl__jmembers_free(&v);
    return rc;
}
#else
/* Member name k of j and its value, as kctl__as_copy_members copies each. */
static int kctl__as_copy_member(kctl_jw *w, kctl__astoks *t, const kctl_json *j, uint32_t k, const kctl_allocator *a) {
    const char *raw = "";
    size_t n = 0;
    if (!KCTL_SMALL && !w->err && kctl__as_copy_verbatim(w, t, j, k, k + 1)) return w->err;
    kctl_json_raw(j, k, &raw, &n);
    kctl__jw_key_raw(w, raw, n);
    kctl__jw_put(w, ":", 1);
    kctl__at_copied(t, w, j, k, true);
    return kctl__as_copy_value(w, t, j, k + 1, a);
}

/* Copy the members of object obj of j that count, but for those named
   by the nskip managed names from the first'th (kctl__as_skip), each
   value as kctl__as_copy_value copies it. */
static int kctl__as_copy_members(kctl_jw *w, kctl__astoks *t, const kctl_json *j, uint32_t obj, const kctl_allocator *a,
                                 int first, int nskip) {
    kctl__jmview v;
    uint32_t i;
    int rc = kctl__jmembers(j, obj, a, false, &v);
    for (i = 0; rc == KCTL_OK && i < v.n; i++)
        if (!kctl__as_skip(j, v.keys[i], first, nskip)) rc = kctl__as_copy_member(w, t, j, v.keys[i], a);
    kctl__jmembers_free(&v);
    return rc;
}
#endif

/* The top-level members as the emit orders them: apiVersion and kind (0, 1), metadata (2), status (3); else -1. */
static int kctl__as_top(const kctl_json *j, uint32_t ktok) {
    return kctl__as_named(j, ktok, kctl__as_names, kctl__as_lens, 4, UINT32_C(0x550)); /* bits 4, 6, 8, 10 */
}

/* A member name of the writer's own, and a string or number value, each recorded in t. */
/* (The names are the rules' own: short, nothing in them to escape.) */
static void kctl__as_key(kctl_jw *w, kctl__astoks *t, const char *name) {
    size_t at = w->len, n = kctl__strlen(name);
    char raw[64];
    if (KCTL_SMALL || n + 2 > sizeof raw) {
        kctl_jw_key(w, name);
    } else {
        raw[0] = '"';
        kctl__memcpy(raw + 1, name, n);
        raw[n + 1] = '"';
        kctl__jw_key_raw(w, raw, n + 2);
        kctl__jw_put(w, ":", 1);
    }
    kctl__at_string(t, w, at, true);
}
/* "name":v, v as kctl_jw_string writes it (the way for a v with
   something to escape: kctl__as_str_member writes the others). */
static void kctl__as_string(kctl_jw *w, kctl__astoks *t, const char *name, const char *v) {
    size_t at;
    kctl__as_key(w, t, name);
    at = w->len;
    kctl_jw_string(w, v);
    kctl__at_string(t, w, at, false);
}

/* The member "name":value of the rules' own written at once, in an object
   whose next member is due; value (n bytes) as it stands, quoted when str
   (v NULL: the name alone, its value to follow). Recorded in t. */
static void kctl__as_member(kctl_jw *w, kctl__astoks *t, const char *name, size_t nlen, const char *v, size_t n, bool str) {
    uint8_t *st;
    char *p;
    size_t at;
    uint32_t i;
    if (w->err || ((w->cap == 0 || nlen + n + 7 >= w->cap - w->len) && !kctl__jw_grow(w, nlen + n + 7))) return;
    st = &w->state[w->depth];
    if (w->depth == 0 || (*st & (KCTL__JW_OBJ | KCTL__JW_KEYED)) != KCTL__JW_OBJ) {
        w->err = KCTL_ERR_INVALID_ARG;
        return;
    }
    p = w->buf + w->len;
    if (*st & KCTL__JW_ITEMS) *p++ = ',';
    *st |= KCTL__JW_ITEMS;
    *p++ = '"';
    at = (size_t)(p - w->buf);
    kctl__memcpy(p, name, nlen);
    p += nlen;
    *p++ = '"';
    *p++ = ':';
    if (!v) {
        *st |= KCTL__JW_KEYED;
        *p = '\0';
        w->len = (size_t)(p - w->buf);
        if (t && t->ok) kctl__at_add(t, KCTL_JSON_STRING, at, at + nlen);
        return;
    }
    if (str) *p++ = '"';
    kctl__memcpy(p, v, n);
    p += n;
    if (str) *p++ = '"';
    *p = '\0';
    w->len = (size_t)(p - w->buf);
    if (!t || !t->ok) return;
    kctl__at_count(t);
    if (t->cap - t->n >= 2) { /* the two tokens, in place */
        kctl_json_tok *k = &t->toks[t->n];
        memset(k, 0, 2 * sizeof *k);
        k[0].type = KCTL_JSON_STRING;
        k[0].start = (uint32_t)at;
        k[0].end = (uint32_t)(at + nlen);
        k[0].skip = 1;
        at += nlen + 2 + str;
        k[1].type = (uint8_t)(str ? KCTL_JSON_STRING : KCTL_JSON_NUMBER);
        k[1].start = (uint32_t)at;
        k[1].end = (uint32_t)(at + n);
        k[1].skip = 1;
        t->n += 2;
        return;
    }
    kctl__at_add(t, KCTL_JSON_STRING, at, at + nlen);
    at += nlen + 2 + str;
    if ((i = kctl__at_add(t, str ? KCTL_JSON_STRING : KCTL_JSON_NUMBER, at, at + n)) != UINT32_MAX) t->toks[i].escaped = 0;
}

/* Whether v[0..n) is ASCII with nothing to escape in JSON (no control
   byte, quote or backslash): 8 bytes at a time (kctl__jspecial8). */
static bool kctl__as_plain(const char *v, size_t n) {
    uint64_t x = UINT64_C(0x0101010101010101) * 'a', bad = 0; /* a short tail padded with a plain byte */
    size_t i = 0;
    if (n < 8) {
        kctl__memcpy(&x, v, n);
        return !kctl__jspecial8(x);
    }
    for (;;) { /* the last word overlaps the one before (the bytes tested twice) */
        kctl__memcpy(&x, v + i, 8);
        bad |= kctl__jspecial8(x);
        if (i + 8 == n) break;
        i = i + 16 <= n ? i + 8 : n - 8;
    }
    return !bad;
}

/* "name":"v" (nlen: the name's length), as kctl_jw_string writes v. */
static KCTL__UNUSED void kctl__as_str_member(kctl_jw *w, kctl__astoks *t, const char *name, size_t nlen, const char *v) {
    size_t n = kctl__strlen(v);
    if (!KCTL_SMALL && kctl__as_plain(v, n)) kctl__as_member(w, t, name, nlen, v, n, true);
    else kctl__as_string(w, t, name, v); /* something to escape */
}

/* "name":v, an integer. */
static KCTL__UNUSED void kctl__as_int_member(kctl_jw *w, kctl__astoks *t, const char *name, size_t nlen, int64_t v) {
    char buf[24], *p;
    if (KCTL_SMALL) { /* nothing recorded */
        kctl_jw_key(w, name);
        kctl_jw_int64(w, v);
        return;
    }
    p = kctl__dec(buf + sizeof buf, v < 0 ? (uint64_t)0 - (uint64_t)v : (uint64_t)v);
    if (v < 0) *--p = '-';
    kctl__as_member(w, t, name, nlen, p, (size_t)(buf + sizeof buf - p), false);
}
/* A member name of the rules' own: its value follows. */
static void kctl__as_name(kctl_jw *w, kctl__astoks *t, const char *name, size_t nlen) {
    if (KCTL_SMALL) kctl_jw_key(w, name);
    else kctl__as_member(w, t, name, nlen, NULL, 0, false);
}
#define KCTL__AS_NAME(s) s, sizeof s - 1

/* Room in w and t for what an emit writes, reserved at once (a guess
   from what it copies; the writer still grows if it falls short). */
static KCTL__UNUSED void kctl__as_presize(kctl_jw *w, kctl__astoks *t, const kctl_json *base, const kctl__asmeta *m, const kctl_json *sdoc,
                             uint32_t status) {
    size_t n = base->len + 320, nt = base->ntoks + 24;
    if (status != KCTL_JSON_NONE && status < sdoc->ntoks) {
        n += sdoc->toks[status].end - sdoc->toks[status].start + 16;
        nt += sdoc->toks[status].skip;
    }
    if (m->fin_kept && m->fin != KCTL_JSON_NONE && m->fin < m->fin_doc->ntoks) {
        n += m->fin_doc->toks[m->fin].end - m->fin_doc->toks[m->fin].start + 16;
        nt += m->fin_doc->toks[m->fin].skip;
    }
    if (w->growable && !w->err && (w->cap == 0 || n >= w->cap - w->len)) kctl__jw_grow(w, n);
    if (t && t->ok && !t->n && t->cap < nt && nt < UINT32_MAX / 2) {
        kctl_json_tok *nk = (kctl_json_tok *)kctl__alloc(&t->a, nt * sizeof *nk);
        if (!nk) {
            t->ok = false;
            return;
        }
        kctl__free(&t->a, t->toks);
        t->toks = nk;
        t->cap = (uint32_t)nt;
    }
}

/* The metadata object of an emit, md of base (KCTL_JSON_NONE: none),
   with the fields m sets (or, m->as_is, base's own but for rv, then m's
   rv), then base's members but those, with the finalizers m keeps. */
static KCTL__SMALL_CALL32 int kctl__as_emit_md(kctl_jw *w, kctl__astoks *t, const kctl_json *base, uint32_t md, const kctl__asmeta *m,
                            const kctl_allocator *a) {
    int rc = KCTL_OK;
#if KCTL_SMALL
    /* (small builds: the fields from a table, in kctl__as_names' order;
       m->as_is sets rv alone, so its rv is that table after base's members) */
    const char *sv[8];
    int k, pass;
    sv[0] = m->name; sv[1] = m->ns; sv[2] = m->uid; sv[3] = m->rv; sv[5] = m->created; sv[6] = m->deleted;
    kctl_jw_key(w, "metadata");
    kctl_jw_object_begin(w);
    for (pass = 0; rc == KCTL_OK && pass < 2; pass++) {
        if (pass != (int)m->as_is) { /* base's members, but resourceVersion (as_is) or the fields m sets */
            if (!m->as_is || kctl_json_type_of(base, md) == KCTL_JSON_OBJECT)
                rc = kctl__as_copy_members(w, t, base, md, a, m->as_is ? 3 : 0, m->as_is ? 1 : 8 + m->fin_kept);
            continue;
        }
        for (k = 0; k < 8; k++) {
            if (k == 4 || k == 7) { /* generation unless 0, deletionGracePeriodSeconds when set */
                if (k == 4 ? !m->generation : !m->has_grace) continue;
                kctl_jw_key(w, kctl__as_names[KCTL__AS_MANAGED + k]);
                kctl_jw_int64(w, k == 4 ? m->generation : m->grace);
            } else if (sv[k] && (*sv[k] || k == 0 || k == 3 || k == 6)) { /* namespace, uid, creationTimestamp: unless empty */
                kctl_jw_key(w, kctl__as_names[KCTL__AS_MANAGED + k]);
                kctl_jw_string(w, sv[k]);
            }
        }
    }
    if (rc == KCTL_OK && m->fin_kept && m->fin != KCTL_JSON_NONE) {
        kctl_jw_key(w, "finalizers");
        rc = kctl__as_copy_value(w, t, m->fin_doc, m->fin, a);
    }
    kctl_jw_object_end(w);
#else
    kctl__as_name(w, t, KCTL__AS_NAME("metadata"));
    kctl_jw_object_begin(w);
    kctl__at_open(t, w, true);
    if (m->as_is) {
        if (kctl_json_type_of(base, md) == KCTL_JSON_OBJECT) rc = kctl__as_copy_members(w, t, base, md, a, 3, 1); /* but resourceVersion */
        if (m->rv) kctl__as_str_member(w, t, KCTL__AS_NAME("resourceVersion"), m->rv);
        goto metadata_done;
    }
    kctl__as_str_member(w, t, KCTL__AS_NAME("name"), m->name);
    if (m->ns && *m->ns) kctl__as_str_member(w, t, KCTL__AS_NAME("namespace"), m->ns);
    if (m->uid && *m->uid) kctl__as_str_member(w, t, KCTL__AS_NAME("uid"), m->uid);
    if (m->rv) kctl__as_str_member(w, t, KCTL__AS_NAME("resourceVersion"), m->rv);
    if (m->generation) kctl__as_int_member(w, t, KCTL__AS_NAME("generation"), m->generation);
    if (m->created && *m->created) kctl__as_str_member(w, t, KCTL__AS_NAME("creationTimestamp"), m->created);
    if (m->deleted) kctl__as_str_member(w, t, KCTL__AS_NAME("deletionTimestamp"), m->deleted);
    if (m->has_grace) kctl__as_int_member(w, t, KCTL__AS_NAME("deletionGracePeriodSeconds"), m->grace);
    if ((rc = kctl__as_copy_members(w, t, base, md, a, 0, m->fin_kept ? 9 : 8)) == KCTL_OK &&
        m->fin_kept && m->fin != KCTL_JSON_NONE) {
        kctl__as_name(w, t, KCTL__AS_NAME("finalizers"));
        rc = kctl__as_copy_value(w, t, m->fin_doc, m->fin, a);
    }
metadata_done:
    kctl_jw_object_end(w);
    kctl__at_close(t, w);
#endif
    return rc;
}

/* An emit's status: base's own (sdoc is base). */
#define KCTL__AS_OWN_STATUS (KCTL_JSON_NONE - 1)

/* Write base with its metadata's managed fields from m (or, m->as_is,
   its own), and the status at status of sdoc (KCTL_JSON_NONE: none;
   KCTL__AS_OWN_STATUS: base's, if any); t (may be NULL) records the
   tokens written. Repeated member names: the last counts. OK, NOMEM, or
   the writer's error. Two walks of base's members (apiVersion, kind and
   where metadata is; the rest), in one listing. */
static int kctl__as_emit(kctl_jw *w, kctl__astoks *t, const kctl_json *base, const kctl__asmeta *m, const kctl_json *sdoc,
                         uint32_t status, const kctl_allocator *a) {
    int rc;
#if KCTL_SMALL /* (small builds: a walk of base's members each, metadata and status looked up) */
    kctl_jw_object_begin(w); /* as an API server writes it: apiVersion, kind, metadata, the rest, status */
    rc = kctl__as_copy_sel(w, base, 0, a, 0, 4, 6u); /* apiVersion, kind (kctl__as_top 0, 1) */
    if (rc == KCTL_OK) rc = kctl__as_emit_md(w, t, base, kctl_json_member(base, 0, "metadata"), m, a);
    if (rc == KCTL_OK) rc = kctl__as_copy_sel(w, base, 0, a, 0, 4, m->as_is ? 0x11u : 1u); /* the rest (and status, as_is) */
    if (rc != KCTL_OK) return rc;
    if (status == KCTL__AS_OWN_STATUS) status = kctl_json_member(base, 0, "status");
#else
    kctl__jmview v;
    uint32_t md = KCTL_JSON_NONE, own = KCTL_JSON_NONE, i;
    int k;
    signed char top[16]; /* kctl__as_top of the first members */
    kctl__as_presize(w, t, base, m, sdoc, status);
    kctl_jw_object_begin(w); /* as an API server writes it: apiVersion, kind, metadata, the rest, status */
    kctl__at_open(t, w, true);
    rc = kctl__jmembers(base, 0, a, false, &v);
    for (i = 0; rc == KCTL_OK && i < v.n; i++) {
        k = kctl__as_top(base, v.keys[i]);
        if (i < sizeof top) top[i] = (signed char)k; /* for the second walk */
        if (k >= 2) *(k == 2 ? &md : &own) = v.keys[i] + 1;
        else if (k == 0 || k == 1) rc = kctl__as_copy_member(w, t, base, v.keys[i], a);
    }
    if (rc == KCTL_OK) rc = kctl__as_emit_md(w, t, base, md, m, a);
    for (i = 0; rc == KCTL_OK && i < v.n; i++) {
        k = i < sizeof top ? top[i] : kctl__as_top(base, v.keys[i]);
        if (k < 0 || (k == 3 && m->as_is)) rc = kctl__as_copy_member(w, t, base, v.keys[i], a);
    }
    kctl__jmembers_free(&v);
    if (rc != KCTL_OK) return rc;
    if (status == KCTL__AS_OWN_STATUS) status = own;
#endif
    if (status != KCTL_JSON_NONE) {
        kctl__as_name(w, t, KCTL__AS_NAME("status"));
        if ((rc = kctl__as_copy_value(w, t, sdoc, status, a)) != KCTL_OK) return rc;
    }
    kctl_jw_object_end(w);
    kctl__at_close(t, w);
    return w->err;
}

/* Whether objects a (at va) and b (at vb) are equal but for the members
   named in skip (the last of repeated names counts): 1 equal, 0 not, or
   NOMEM. Their members are matched by name in one walk. */
#if KCTL_SMALL
/* (small builds: by scanning, kctl__jequal_scan, in no memory:
   O(members squared)) */
static int kctl__as_equal_except(const kctl_json *a, uint32_t va, const kctl_json *b, uint32_t vb, const char *const *skip,
                                 size_t nskip, const kctl_allocator *al) {
    if (kctl_json_type_of(a, va) != KCTL_JSON_OBJECT || kctl_json_type_of(b, vb) != KCTL_JSON_OBJECT)
        return kctl__jequal(a, va, b, vb, al);
    return kctl__jequal_scan(a, va, b, vb, skip, nskip, al);
}
#else
static bool kctl__as_skipped(const kctl_json *j, uint32_t ktok, const char *const *skip, size_t nskip) {
    size_t s;
    for (s = 0; s < nskip; s++)
        if (kctl_json_string_eq(j, ktok, skip[s])) return true;
    return false;
}

static int kctl__as_equal_except(const kctl_json *a, uint32_t va, const kctl_json *b, uint32_t vb, const char *const *skip,
                                 size_t nskip, const kctl_allocator *al) {
    kctl__jmview p, q;
    uint32_t i = 0, k = 0;
    int rc = 1;
    if (kctl_json_type_of(a, va) != KCTL_JSON_OBJECT || kctl_json_type_of(b, vb) != KCTL_JSON_OBJECT)
        return kctl__jequal(a, va, b, vb, al);
    if (kctl__jmembers(a, va, al, true, &p) != KCTL_OK || kctl__jmembers(b, vb, al, true, &q) != KCTL_OK) {
        kctl__jmembers_free(&p);
        kctl__jmembers_free(&q);
        return KCTL_ERR_NOMEM;
    }
    for (;;) { /* both in name order: step over the skipped, then pair the rest */
        uint32_t ka, kb;
        while (i < p.n && kctl__as_skipped(a, p.keys[p.byname[i]], skip, nskip)) i++;
        while (k < q.n && kctl__as_skipped(b, q.keys[q.byname[k]], skip, nskip)) k++;
        if (i == p.n || k == q.n) {
            rc = i == p.n && k == q.n;
            break;
        }
        ka = p.keys[p.byname[i++]];
        kb = q.keys[q.byname[k++]];
        if (!kctl__jtok_eq(a, &a->toks[ka], b, &b->toks[kb]) || !kctl__jequal(a, ka + 1, b, kb + 1, al)) {
            rc = 0;
            break;
        }
    }
    kctl__jmembers_free(&p);
    kctl__jmembers_free(&q);
    return rc;
}
#endif

/* A document and the same with only its resourceVersion changed are the
   same write. */
static int kctl__as_same(const kctl_json *a, const kctl_json *b, const kctl_allocator *al) {
    static const char *const root_skip[] = { "metadata" }, *const md_skip[] = { "resourceVersion" };
    int rc = kctl__as_equal_except(a, 0, b, 0, root_skip, 1, al);
    if (rc != 1) return rc;
    return kctl__as_equal_except(a, kctl_json_member(a, 0, "metadata"), b, kctl_json_member(b, 0, "metadata"), md_skip, 1, al);
}

/* The custom resource rule: anything but metadata and status changed:
   1 it did, 0 not, or NOMEM. */
static int kctl__as_bumps_generation(const kctl_json *sent, const kctl_json *cur, const kctl_allocator *al) {
    static const char *const skip[] = { "metadata", "status" };
    int rc = kctl__as_equal_except(sent, 0, cur, 0, skip, 2, al);
    return rc < 0 ? rc : !rc;
}

/* ---- what the rules read of a stored object, kept by its store (the
   memstore keeps one per object) so an update need not parse the stored
   document: a fingerprint of its body, where its status and finalizers
   stand in it, its creationTimestamp. */

/* A fingerprint of value v of j that every value kctl__jequal finds equal
   to it shares (strings unescaped; objects by the members that count, in
   any order; numbers by their value, 1 and 1.0 alike; skip names
   members of an object at v left out): two values whose fingerprints
   differ are not equal; equal fingerprints prove nothing. OK, or NOMEM
   (the member list of an object of many members). */
static uint64_t kctl__as_fp_mix(uint64_t x) {
    x ^= x >> 32;
    x *= UINT64_C(0xd6e8feb86659fd93);
    x ^= x >> 32;
    x *= UINT64_C(0xd6e8feb86659fd93);
    return x ^ (x >> 32);
}

static uint64_t kctl__as_fp_str(const kctl_json *j, uint32_t v) {
    const kctl_json_tok *t = &j->toks[v];
    const char *p = j->text + t->start, *e = j->text + t->end;
    uint64_t h = UINT64_C(0xcbf29ce484222325); /* FNV-1a of the unescaped bytes */
    char u[4];
    uint32_t n, k;
    if (!t->escaped) {
        for (; p < e; p++) h = (h ^ (unsigned char)*p) * UINT64_C(0x100000001b3);
        return h;
    }
    while (p < e)
        for (n = kctl__jnext(&p, e, true, u), k = 0; k < n; k++) h = (h ^ (unsigned char)u[k]) * UINT64_C(0x100000001b3);
    return h;
}

/* A number by its value, as kctl__jnum_eq compares them (1, 1.0 and 1e0
   alike): its sign, significant digits and decimal exponent, an exponent
   past 10^17 either way (too far out to be found exactly) alike for all;
   so that a body changed in a number alone is not taken for the same. */
static uint64_t kctl__as_fp_num(const kctl_json *j, uint32_t v) {
    const kctl_json_tok *t = &j->toks[v];
    kctl__jdec d;
    uint64_t h = UINT64_C(0xcbf29ce484222325), x = 0;
    const char *p;
    uint32_t k;
    int64_t e = 0;
    bool far = false, neg;
    const char *s = j->text + t->start, *end = j->text + t->end, *z;
    neg = *s == '-';
    for (p = s + neg; p < end && *p >= '0' && *p <= '9'; p++) continue;
    if (p == end) { /* an integer as written (the common case): as below, without the decimal's reading */
        for (p = s + neg, z = end; z > p && z[-1] == '0'; z--) continue;
        if (z == p) return kctl__as_fp_mix(h); /* zero (no leading zeros in JSON): no digits, exponent 0, no sign */
        e = end - p;
        for (; p < z; p++) h = (h ^ (unsigned char)*p) * UINT64_C(0x100000001b3);
        return kctl__as_fp_mix(h ^ (uint64_t)e ^ (neg ? UINT64_C(0xa5a5a5a5) << 32 : 0));
    }
    kctl__jdec_of(s, end, &d);
    for (k = 0; k < d.ndig; k++) h = (h ^ (unsigned char)kctl__jdec_digit(&d, k)) * UINT64_C(0x100000001b3);
    if (d.x_s && d.x_e - d.x_s > 18) far = true; /* (no leading zeros: 10^18 and more) */
    else if (d.x_s)
        for (p = d.x_s; p < d.x_e; p++) x = x * 10 + (uint64_t)(*p - '0');
    if (!far) { /* the shift is below 2^32 (a digit count): no overflow */
        e = d.shift + (d.xneg ? -(int64_t)x : (int64_t)x);
        far = e > INT64_C(100000000000000000) || e < -INT64_C(100000000000000000);
    }
    return kctl__as_fp_mix(h ^ (far ? UINT64_C(0x9e3779b97f4a7c15) : (uint64_t)e) ^ (d.neg ? UINT64_C(0xa5a5a5a5) << 32 : 0));
}

/* (top: v is a document, whose metadata and status are left out) */
static int kctl__as_fp(const kctl_json *j, uint32_t v, bool top, const kctl_allocator *a, uint64_t *out) {
    const kctl_json_tok *t = &j->toks[v];
    uint64_t h = 0, x;
    uint32_t k, e;
    int rc = KCTL_OK;
    switch (t->type) {
    case KCTL_JSON_STRING: h = kctl__as_fp_str(j, v); break;
    case KCTL_JSON_ARRAY: /* in order */
        for (k = 0, e = v + 1; rc == KCTL_OK && k < t->size; k++, e += j->toks[e].skip)
            if ((rc = kctl__as_fp(j, e, false, a, &x)) == KCTL_OK) h = kctl__as_fp_mix(h + x);
        break;
    case KCTL_JSON_OBJECT: { /* a sum: in any order */
        kctl__jmview m;
        if (t->size <= 4) { /* a few members: the last of each name found by looking ahead, in no memory */
            for (k = 0, e = v + 1; rc == KCTL_OK && k < t->size; k++, e += 1 + j->toks[e + 1].skip)
                if (kctl__jlast(j, v, e) && !(top && kctl__as_top(j, e) >= 2) && (rc = kctl__as_fp(j, e + 1, false, a, &x)) == KCTL_OK)
                    h += kctl__as_fp_mix(kctl__as_fp_str(j, e) ^ kctl__as_fp_mix(x + 1));
            break;
        }
        rc = kctl__jmembers(j, v, a, false, &m);
        for (k = 0; rc == KCTL_OK && k < m.n; k++)
            if (!(top && kctl__as_top(j, m.keys[k]) >= 2) && (rc = kctl__as_fp(j, m.keys[k] + 1, false, a, &x)) == KCTL_OK)
                h += kctl__as_fp_mix(kctl__as_fp_str(j, m.keys[k]) ^ kctl__as_fp_mix(x + 1));
        kctl__jmembers_free(&m);
        break;
    }
    case KCTL_JSON_NUMBER: h = kctl__as_fp_num(j, v); break;
    default: break; /* true, false, null: their type */
    }
    *out = kctl__as_fp_mix(h ^ t->type);
    return rc;
}

/* The fingerprint of a document's body: everything but metadata and
   status, what the custom resource rule compares. */
static int kctl__as_fp_body(const kctl_json *j, const kctl_allocator *a, uint64_t *out) {
    if (kctl_json_type_of(j, 0) != KCTL_JSON_OBJECT) return KCTL_ERR_INVALID_ARG;
    return kctl__as_fp(j, 0, true, a, out);
}

/* What a store keeps of an object it stores for its next update. */
typedef struct kctl__ascur {
    const kctl_obj *obj;         /* the object it is of (NULL: nothing kept) */
    uint64_t body;               /* kctl__as_fp_body of its document */
    uint32_t status, status_end; /* the status' text in the document (status_end 0: none) */
    uint32_t fin, fin_end;       /* metadata.finalizers' (fin_end 0: none) */
    uint32_t created;            /* metadata.creationTimestamp's string, without escapes (created_len 0: none) */
    uint8_t created_len;
} kctl__ascur;

/* The raw span of value v of j (a string with its quotes). */
static void kctl__as_span_of(const kctl_json *j, uint32_t v, uint32_t *start, uint32_t *end) {
    const kctl_json_tok *t = &j->toks[v];
    *start = t->start - (t->type == KCTL_JSON_STRING);
    *end = t->end + (t->type == KCTL_JSON_STRING);
}

/* c for document j of a stored object (c->obj is the caller's to set);
   body (may be NULL): its body's fingerprint, known already. OK; NOMEM;
   INVALID_ARG when the rules must read the document itself (a
   deletionGracePeriodSeconds; a creationTimestamp escaped or long). */
static KCTL__UNUSED int kctl__as_cur_of(kctl__ascur *c, const kctl_json *j, const kctl_allocator *a, const uint64_t *body) {
    static const char *const names[3] = { "deletionGracePeriodSeconds", "creationTimestamp", "finalizers" };
    static const unsigned char lens[3] = { 26, 17, 10 };
    uint32_t md = KCTL_JSON_NONE, status = KCTL_JSON_NONE, v, mv[3] = { KCTL_JSON_NONE, KCTL_JSON_NONE, KCTL_JSON_NONE }, i, m;
    int rc, k;
    memset(c, 0, sizeof *c);
    if (kctl_json_type_of(j, 0) != KCTL_JSON_OBJECT) return KCTL_ERR_INVALID_ARG;
    for (i = 1, m = 0; m < j->toks[0].size; m++, i += 1 + j->toks[i + 1].skip) { /* one walk each, the last of a name counts */
        k = kctl__as_top(j, i);
        if (k == 2) md = i + 1;
        else if (k == 3) status = i + 1;
    }
    if (kctl_json_type_of(j, md) != KCTL_JSON_OBJECT) return KCTL_ERR_INVALID_ARG;
    for (i = md + 1, m = 0; m < j->toks[md].size; m++, i += 1 + j->toks[i + 1].skip) {
        uint32_t n = j->toks[i].end - j->toks[i].start; /* (the lengths' test here first: it decides most names) */
        if (!j->toks[i].escaped && n != 10 && n != 17 && n != 26) continue;
        if ((k = kctl__as_named(j, i, names, lens, 3, UINT32_C(0x4020400))) >= 0) mv[k] = i + 1; /* bits 10, 17, 26 */
    }
    if (mv[0] != KCTL_JSON_NONE) return KCTL_ERR_INVALID_ARG;
    v = mv[1];
    if (kctl_json_type_of(j, v) == KCTL_JSON_STRING) { /* as kctl__as_cur_meta reads it */
        if (j->toks[v].escaped || j->toks[v].end - j->toks[v].start >= 64) return KCTL_ERR_INVALID_ARG;
        c->created = j->toks[v].start;
        c->created_len = (uint8_t)(j->toks[v].end - j->toks[v].start);
    }
    if (status != KCTL_JSON_NONE) kctl__as_span_of(j, status, &c->status, &c->status_end);
    if ((v = mv[2]) != KCTL_JSON_NONE) kctl__as_span_of(j, v, &c->fin, &c->fin_end);
    if (body) {
        c->body = *body;
#ifndef NDEBUG
        { /* debug builds: it is the document's (an internal invariant) */
            uint64_t chk;
            if (kctl__as_fp_body(j, NULL, &chk) == KCTL_OK && chk != *body) abort();
        }
#endif
        return KCTL_OK;
    }
    if ((rc = kctl__as_fp_body(j, a, &c->body)) != KCTL_OK) memset(c, 0, sizeof *c);
    return rc;
}

/* Parse the value at doc[start..end) into d, its tokens placed as in a
   parse of all of doc[0..len) (the value is token 0). */
static int kctl__as_span_parse(kctl__jdoc *d, const char *doc, size_t len, uint32_t start, uint32_t end, const kctl_allocator *a) {
    kctl_json_limits lim;
    uint32_t i;
    int rc;
    lim.max_depth = KCTL__JSON_DEPTH_CAP; /* part of a stored object: whatever limits made it */
    lim.max_bytes = UINT32_MAX - 1;
    if ((rc = kctl__jdoc_parse(d, doc + start, end - start, a, &lim)) != KCTL_OK) return rc;
    for (i = 0; i < d->j.ntoks; i++) {
        d->toks[i].start += start;
        d->toks[i].end += start;
    }
    d->j.text = doc;
    d->j.len = len;
    return KCTL_OK;
}

#ifndef KCTL_NO_GENERATE_NAME
/* A 5-character suffix from apimachinery's alphabet. */
static void kctl__as_gen_name(kctl__asin *in, uint64_t seed) {
    static const char alphabet[] = "bcdfghjklmnpqrstvwxz2456789";
    size_t base = in->gen_len > 58 ? 58 : in->gen_len, i;
    uint64_t x = seed ^ UINT64_C(0x9e3779b97f4a7c15);
    kctl__memcpy(in->gen, in->gen_name, base);
    for (i = 0; i < 5; i++) {
        uint64_t k;
        x ^= x >> 33;
        x *= UINT64_C(0xff51afd7ed558ccd);
        x ^= x >> 29;
        kctl__udiv64(x, 27, &k);
        in->gen[base + i] = alphabet[k];
    }
    in->gen[base + 5] = '\0';
    in->name = in->gen;
    in->name_len = base + 5;
}
#endif

/* A sent document read before its decision, by what it alone decides (a
   store does it outside its lock): parsed with the request's allocator
   and limits, and its body's fingerprint. */
typedef struct kctl__aspre {
    const char *json; /* the text it is of */
    size_t len;
    bool parsed, fp_ok;
    kctl__jdoc sent;
    uint64_t fp;
} kctl__aspre;

/* Read json[0..len) into p, with its body's fingerprint when fp (not for
   a status write: it compares no bodies): whatever fails is left to the
   decision (it reads the document again, and refuses it as it should). */
static KCTL__UNUSED void kctl__as_pre(kctl__aspre *p, const char *json, size_t len, const kctl_allocator *a, const kctl_json_limits *lim,
                                      bool fp) {
    memset(p, 0, sizeof *p);
    p->json = json;
    p->len = len;
    if (!json || kctl__jdoc_parse(&p->sent, json, len, a, lim) != KCTL_OK) {
        kctl__jdoc_free(&p->sent);
        return;
    }
    p->parsed = true;
    p->fp_ok = fp && kctl__as_fp_body(&p->sent.j, a, &p->fp) == KCTL_OK;
}

static KCTL__UNUSED void kctl__as_pre_free(kctl__aspre *p) {
    kctl__jdoc_free(&p->sent);
    p->parsed = false;
}

/* Everything a decision holds while it is made. */
typedef struct kctl__asrun {
    const kctl_apisrv_req *req;
    kctl_jw *out;
    kctl_apisrv_decision *d;
    kctl_api_status *st;
    kctl__asstr sc;
    kctl__jdoc sent, cur;
#ifndef KCTL_NO_MERGE_PATCH
    kctl__jdoc merged;
    kctl_jw mbuf; /* a patch's merged document */
#endif
    char cur_created[64];
    kctl__jdoc *keep;                /* NULL, or where the document written to out is parsed for the caller */
    const kctl_json_limits *keep_lim; /* with these limits */
    int keep_rc;                     /* and what that parse returned when it failed (keep then holds nothing) */
    bool kept;
    kctl__astoks toks;               /* with keep: the tokens of the document written, recorded by the emit */
    const kctl__ascur *(*cur_of)(const kctl_obj *cur, void *lookup_user_data); /* what the store kept of cur (may be NULL) */
    uint64_t sent_fp;                /* kctl__as_fp_body of the document sent (sent_fp_ok): the body written too */
    bool sent_fp_ok;
    bool sent_fp_pre;                /* sent_fp is r->sent's, found before the decision (kctl__aspre) */
    kctl__jdoc curfin;               /* the stored finalizers, parsed on their own (kctl__as_cur_known) */
#if !KCTL_SMALL
    char sc_own[384];                /* sc's memory when it fits (a document's usual metadata): nothing allocated (last) */
#endif
} kctl__asrun;

/* The scratch's memory freed: sc_own is not (small builds: always allocated). */
#if KCTL_SMALL
#define KCTL__AS_SC_FREE(r, a) kctl__free((a), (r)->sc.buf)
#else
#define KCTL__AS_SC_FREE(r, a) do { if ((r)->sc.buf != (r)->sc_own) kctl__free((a), (r)->sc.buf); } while (0)
#endif

#ifndef KCTL_NO_VALIDATION
static int kctl__as_bad_request(kctl__asrun *r, const char *why) {
    kctl_jw b;
    int rc;
    if (!r->st) return KCTL_ERR_INVALID_ARG;
    kctl_jw_init_growable(&b, &r->req->allocator);
    kctl__bprintf(&b, "%s", why);
    rc = kctl__as_status(r->st, &b, 400, "BadRequest", NULL, NULL, NULL, NULL);
    kctl_jw_free(&b);
    return rc;
}
#else
#define kctl__as_bad_request(r, why) kctl__as_bare((r)->st, 400, "BadRequest", NULL, NULL, NULL)
#endif

/* Parse text (the sent document, or a patch) as a request body. */
static int kctl__as_parse_body(kctl__asrun *r, kctl__jdoc *d, const char *text, size_t len) {
    int rc = kctl__jdoc_parse(d, text, len, &r->req->allocator, &r->req->limits);
    if (rc == KCTL_OK || rc == KCTL_ERR_NOMEM) return rc;
    if (rc == KCTL_ERR_TOO_LARGE) {
        return kctl__as_simple(r->st, &r->req->allocator, 413, "RequestEntityTooLarge",
                               "Request entity too large: the document is beyond the store's size or depth limit");
    }
    return kctl__as_bad_request(r, "the object provided is not valid JSON");
}

/* The stored object's own metadata strings, for the managed fields. */
static int kctl__as_cur_meta(kctl__asrun *r, const kctl_obj *cur, kctl__asmeta *m) {
    const char *doc;
    size_t len;
    uint32_t md, v;
    int64_t grace = 0;
    int rc;
    kctl_json_limits lim;
    lim.max_depth = KCTL__JSON_DEPTH_CAP; /* it is an object already: whatever limits made it */
    lim.max_bytes = UINT32_MAX - 1;
    doc = kctl_obj_json(cur, &len);
    if ((rc = kctl__jdoc_parse(&r->cur, doc, len, &r->req->allocator, &lim)) != KCTL_OK) return rc;
    md = kctl_json_member(&r->cur.j, 0, "metadata");
    if (kctl_json_string(&r->cur.j, kctl_json_member(&r->cur.j, md, "creationTimestamp"), r->cur_created, sizeof r->cur_created, NULL) != KCTL_OK)
        r->cur_created[0] = '\0';
    memset(m, 0, sizeof *m);
    m->name = kctl_obj_name(cur);
    m->ns = kctl_obj_namespace(cur); /* (cur stays valid for the whole decision) */
    m->uid = kctl_obj_uid(cur);
    m->created = r->cur_created;
    m->deleted = kctl_obj_deletion_timestamp(cur);
    m->generation = kctl_obj_generation(cur);
    v = kctl_json_member(&r->cur.j, md, "deletionGracePeriodSeconds");
    if (kctl_json_int64(&r->cur.j, v, &grace) == KCTL_OK) {
        m->has_grace = true;
        m->grace = grace;
    }
    return KCTL_OK;
}

/* kctl__as_cur_meta without a parse of the stored document, from what its
   store kept (r->cur_of): for an update whose body is not the stored one
   (the fingerprints differ: the generation is bumped, and the document
   written cannot be the stored one) of an object not being deleted. Its
   status, if any, is parsed on its own into r->cur (token 0: *status;
   none: KCTL_JSON_NONE). *taken false: the caller parses the document
   (nothing kept, the fingerprints agree, or no memory for the sent one's).
   OK or NOMEM. */
static int kctl__as_cur_known(kctl__asrun *r, const kctl_obj *cur, const kctl_json *sent, kctl__asmeta *m, uint32_t *status,
                              bool *taken) {
    const kctl__ascur *c;
    const char *doc;
    size_t len;
    uint64_t fp;
    int rc;
    *taken = false;
    *status = KCTL_JSON_NONE;
    if (!r->cur_of || kctl_obj_deletion_timestamp(cur) || !(c = r->cur_of(cur, r->req->lookup_user_data)) || c->obj != cur)
        return KCTL_OK;
    if (r->sent_fp_pre && sent == &r->sent.j) fp = r->sent_fp;
    else if (kctl__as_fp_body(sent, &r->req->allocator, &fp) != KCTL_OK) return KCTL_OK;
    r->sent_fp = fp; /* an update writes the body sent */
    r->sent_fp_ok = true;
    if (fp == c->body) return KCTL_OK;
    doc = kctl_obj_json(cur, &len);
    if (c->status_end) {
        if ((rc = kctl__as_span_parse(&r->cur, doc, len, c->status, c->status_end, &r->req->allocator)) != KCTL_OK) {
            kctl__jdoc_free(&r->cur);
            memset(&r->cur, 0, sizeof r->cur);
            return rc == KCTL_ERR_NOMEM ? rc : KCTL_OK;
        }
        *status = 0;
    }
    kctl__memcpy(r->cur_created, doc + c->created, c->created_len);
    r->cur_created[c->created_len] = '\0';
    memset(m, 0, sizeof *m);
    m->name = kctl_obj_name(cur);
    m->ns = kctl_obj_namespace(cur);
    m->uid = kctl_obj_uid(cur);
    m->created = r->cur_created;
    m->generation = kctl_obj_generation(cur);
    *taken = true;
    return KCTL_OK;
}

/* The stored finalizers for an apply that keeps them (kctl__as_cur_known
   taken): parsed on their own into r->curfin. OK or NOMEM; INVALID_ARG:
   the caller parses the document. */
static int kctl__as_cur_known_fin(kctl__asrun *r, const kctl_obj *cur, kctl__asmeta *m) {
    const kctl__ascur *c = r->cur_of(cur, r->req->lookup_user_data);
    const char *doc;
    size_t len;
    int rc;
    m->fin_doc = &r->curfin.j;
    m->fin = KCTL_JSON_NONE;
    if (!c->fin_end) return KCTL_OK;
    doc = kctl_obj_json(cur, &len);
    if ((rc = kctl__as_span_parse(&r->curfin, doc, len, c->fin, c->fin_end, &r->req->allocator)) != KCTL_OK)
        return rc == KCTL_ERR_NOMEM ? rc : KCTL_ERR_INVALID_ARG;
    m->fin = 0;
    return KCTL_OK;
}


#ifndef KCTL_NO_VALIDATION
/* Go's sort order of strings: bytewise. */
static int kctl__as_cmp_str(const void *a, const void *b) {
    return kctl__strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* The finalizers of the sent document that cur does not have (a deleting
   object takes none): 0 and OK when there are none; else 422 Forbidden
   as ValidateNoNewFinalizers words it (sorted, without repeats). */
static int kctl__as_new_finalizers(kctl__asrun *r, const kctl__asin *in, const char *kind, const kctl_obj *cur, bool *refused) {
    const kctl_json *j = in->j;
    uint32_t v = in->mv[KCTL__AM_FINALIZERS], i, k;
    const char **fresh = NULL;
    size_t n = 0, m;
    kctl__aserr e;
    int rc = KCTL_OK;
    *refused = false;
    if (kctl_json_type_of(j, v) != KCTL_JSON_ARRAY || !j->toks[v].size) return KCTL_OK;
    if (!(fresh = (const char **)kctl__alloc(&r->req->allocator, j->toks[v].size * sizeof *fresh))) return KCTL_ERR_NOMEM;
    for (i = v + 1, k = 0; k < j->toks[v].size; k++, i += j->toks[i].skip) {
        const char *f;
        if (kctl__as_str(&r->sc, j, i, &f, NULL) && !kctl_obj_has_finalizer(cur, f)) fresh[n++] = f;
    }
    if (n) {
        *refused = true;
        kctl__sort(fresh, n, sizeof *fresh, kctl__as_cmp_str);
        kctl__as_err_init(&e, &r->req->allocator);
        kctl__as_err_begin(&e, "FieldValueForbidden");
        kctl__bprintf(&e.text, "Forbidden: no new finalizers can be added if the object is being deleted, found new finalizers []string{");
        for (m = 0; m < n; m++) {
            if (m && kctl__strcmp(fresh[m], fresh[m - 1]) == 0) continue;
            if (m) kctl__bprintf(&e.text, ", ");
            kctl__as_quote(&e.text, fresh[m], kctl__strlen(fresh[m]));
        }
        kctl__bprintf(&e.text, "}");
        kctl__as_err_end(&e, "metadata.finalizers");
        rc = e.text.err ? e.text.err
                        : kctl__as_refuse_invalid(r->st, &r->req->allocator, r->req->res, kind,
                                                  kctl_obj_name(cur), &e);
        if (!r->st && rc == KCTL_OK) rc = KCTL_ERR_INVALID_ARG;
        kctl__as_err_free(&e);
    }
    kctl__free(&r->req->allocator, fresh);
    return rc;
}
#else
/* Whether the sent document has a finalizer cur does not (a deleting
   object takes none): *refused, with 422 Invalid (no words); OK, NOMEM. */
static int kctl__as_new_finalizers(kctl__asrun *r, const kctl__asin *in, const char *kind, const kctl_obj *cur, bool *refused) {
    const kctl_json *j = in->j;
    uint32_t v = in->mv[KCTL__AM_FINALIZERS], i, k;
    const char *f;
    *refused = false;
    if (kctl_json_type_of(j, v) != KCTL_JSON_ARRAY) return KCTL_OK;
    for (i = v + 1, k = 0; k < j->toks[v].size; k++, i += j->toks[i].skip)
        if (kctl__as_str(&r->sc, j, i, &f, NULL) && !kctl_obj_has_finalizer(cur, f)) {
            *refused = true;
            return kctl__as_invalid_bare(r->st, r->req->res, kind, kctl_obj_name(cur));
        }
    return KCTL_OK;
}
#endif

/* Read and check a sent document: its metadata strings into in (400
   BadRequest for a bad shape, 413 for more than kctl holds). */
static int kctl__as_take(kctl__asrun *r, const kctl_json *j, kctl__asin *in) {
    size_t span = 64, c;
    const char *why;
#if KCTL_SMALL
    uint32_t md = kctl_json_member(j, 0, "metadata"), kind = kctl_json_member(j, 0, "kind"), v;
#else /* (one walk of the members for both, the last of a name counts) */
    uint32_t md = KCTL_JSON_NONE, kind = KCTL_JSON_NONE, v, i, k;
    int top;
    if (kctl_json_type_of(j, 0) == KCTL_JSON_OBJECT)
        for (i = 1, k = 0; k < j->toks[0].size; k++, i += 1 + j->toks[i + 1].skip)
            if ((top = kctl__as_top(j, i)) == 1 || top == 2) *(top == 2 ? &md : &kind) = i + 1;
#endif
    if (kctl_json_type_of(j, md) == KCTL_JSON_OBJECT) span += j->toks[md].end - j->toks[md].start;
    if (kctl_json_type_of(j, kind) == KCTL_JSON_STRING) span += j->toks[kind].end - j->toks[kind].start;
    KCTL__AS_SC_FREE(r, &r->req->allocator);
    r->sc.used = 0;
    r->sc.cap = 3 * span; /* every metadata string once as read, again when checked, again for finalizers */
#if !KCTL_SMALL
    if (r->sc.cap <= sizeof r->sc_own) r->sc.buf = r->sc_own;
    else
#endif
    if (!(r->sc.buf = (char *)kctl__alloc(&r->req->allocator, r->sc.cap))) return KCTL_ERR_NOMEM;
    if ((why = kctl__as_read(in, &r->sc, j, md, kind)) != NULL) return kctl__as_bad_request(r, why);
    for (c = 0; c < 4; c++) {
        v = in->mv[KCTL__AM_LABELS + c]; /* labels, annotations, finalizers, ownerReferences (a size: an object's or an array's) */
        if (v != KCTL_JSON_NONE && j->toks[v].size > KCTL__OBJ_COUNT_MAX) {
            return kctl__as_simple(r->st, &r->req->allocator, 413, "RequestEntityTooLarge",
                                   "Request entity too large: more than 65535 labels, annotations, finalizers or owner references");
        }
    }
    return KCTL_OK;
}

/* The request's namespace wins; a document that names another is refused. */
static int kctl__as_namespace(kctl__asrun *r, kctl__asin *in) {
    const char *rns = r->req->res->ns;
    if (rns && *rns) {
        if (in->ns_len && kctl__strcmp(in->ns, rns) != 0)
            return kctl__as_bad_request(r, "the namespace of the provided object does not match the namespace sent on the request");
        in->ns = rns;
        in->ns_len = kctl__strlen(rns);
    }
    return KCTL_OK;
}

#ifndef KCTL_NO_VALIDATION
/* 409 Conflict about kind/name with a reason of its own. */
static int kctl__as_conflict(kctl__asrun *r, const char *what, bool kind_first, const char *name, const char *fmt,
                             const char *a, const char *b) {
    kctl_jw w;
    int rc;
    if (!r->st) return KCTL_ERR_CONFLICT;
    kctl_jw_init_growable(&w, &r->req->allocator);
    kctl__bprintf(&w, "Operation cannot be fulfilled on ");
    if (kind_first) {
        kctl__bprintf(&w, "%s", what);
        if (r->req->res->group && *r->req->res->group) kctl__bprintf(&w, ".%s", r->req->res->group);
    } else {
        kctl__as_gr(&w, r->req->res);
    }
    kctl__bprintf(&w, " ");
    kctl__as_quote(&w, name, kctl__strlen(name));
    kctl__bprintf(&w, ": ");
    kctl__bprintf(&w, fmt, a, b);
    rc = kctl__as_status(r->st, &w, 409, "Conflict", r->req->res, name, what, NULL);
    kctl_jw_free(&w);
    return rc == KCTL_ERR_NOMEM ? rc : KCTL_ERR_CONFLICT;
}
#else
#define kctl__as_conflict(r, what, kind_first, name, fmt, a, b) kctl__as_bare((r)->st, 409, "Conflict", (r)->req->res, (name), (what))
#endif

/* Forget what was written to out (an UNCHANGED or a refusal). */
/* The recorder for an emit into r->out: with keep, when out is empty
   (the tokens' offsets are from its start); else NULL. */
static kctl__astoks *kctl__as_rec(kctl__asrun *r) {
    if (KCTL_SMALL || !r->keep || r->out->len) return NULL;
    kctl__at_free(&r->toks);
    kctl__at_init(&r->toks, &r->req->allocator);
    return &r->toks;
}

/* Hand the recorded tokens of out to r->keep, as kctl__jdoc_parse would
   have made them with r->keep_lim: true; false when there are none, or
   the limits are near enough that the parser must decide. */
static bool kctl__as_keep_recorded(kctl__asrun *r) {
    const kctl__astoks *t = &r->toks;
    const kctl_json_limits *lim = r->keep_lim;
    uint32_t max_depth = KCTL_JSON_MAX_DEPTH, max_bytes = KCTL_JSON_MAX_BYTES;
    if (lim && lim->max_depth) max_depth = lim->max_depth < KCTL__JSON_DEPTH_CAP ? lim->max_depth : KCTL__JSON_DEPTH_CAP;
    if (lim && lim->max_bytes) max_bytes = lim->max_bytes;
    if (!t->ok || !t->n || t->depth || t->toks[0].start != 0 || t->toks[0].end != r->out->len || r->out->len > max_bytes ||
        r->out->len >= UINT32_MAX || t->max_depth >= max_depth)
        return false;
#ifndef NDEBUG
    { /* debug builds: the recording is what the parser makes of the document (an internal invariant) */
        kctl__jdoc chk;
        int rc = kctl__jdoc_parse(&chk, r->out->buf, r->out->len, NULL, lim); /* not on the caller's allocator: its counts stay */
        bool same = rc == KCTL_OK && chk.j.ntoks == t->n && kctl__memcmp(chk.j.toks, t->toks, (size_t)t->n * sizeof *t->toks) == 0;
        kctl__jdoc_free(&chk);
        if (rc == KCTL_ERR_NOMEM) return false;
        if (!same) abort();
    }
#endif
    memset(r->keep, 0, sizeof *r->keep);
    r->keep->a = r->req->allocator;
    r->keep->toks = t->toks;
    r->keep->j.text = r->out->buf;
    r->keep->j.len = r->out->len;
    r->keep->j.toks = t->toks;
    r->keep->j.ntoks = t->n;
    r->toks.toks = NULL; /* keep's now */
    r->toks.n = r->toks.cap = 0;
    r->toks.ok = false;
    return true;
}

static void kctl__as_out_reset(kctl_jw *w) {
    w->len = 0;
    if (w->buf && w->cap) w->buf[0] = '\0';
    w->depth = 0;
    w->state[0] = 0;
}

/* Parse the document written to out into r->keep with r->keep_lim (once):
   OK, r->kept when it parsed; a refusal by the limits is kept in
   r->keep_rc for the caller (a store's limits refuse it later); NOMEM. */
static KCTL__UNUSED int kctl__as_keep(kctl__asrun *r) {
    int rc;
    if (!r->keep || r->kept || r->keep_rc != KCTL_OK) return KCTL_OK;
    if (!KCTL_SMALL && kctl__as_keep_recorded(r)) {
        r->kept = true;
        return KCTL_OK;
    }
    rc = kctl__jdoc_parse(r->keep, r->out->buf, r->out->len, &r->req->allocator, r->keep_lim);
    if (rc == KCTL_OK) {
        r->kept = true;
        return KCTL_OK;
    }
    kctl__jdoc_free(r->keep);
    if (rc == KCTL_ERR_NOMEM) return rc;
    r->keep_rc = rc;
    return KCTL_OK;
}

/* create, update, update_status (and a patch's merged document, with the
   object it patched). */
static int kctl__as_write(kctl__asrun *r, const kctl_json *sent, kctl_verb verb, const kctl_obj *patched) {
    const kctl_apisrv_req *req = r->req;
    const kctl_json *base, *sdoc;
    const kctl_obj *cur = NULL;
    kctl__asin in;
    kctl__asmeta m;
#ifndef KCTL_NO_VALIDATION
    kctl__aserr e;
#endif
    uint32_t status;
    size_t nfin;
    bool create = verb == KCTL_VERB_CREATE, status_only = verb == KCTL_VERB_UPDATE_STATUS;
    const char *kind;
    int rc, bump = 0;
    bool known = false;                  /* the stored document's parts from its store: not parsed */
    uint32_t known_status = KCTL_JSON_NONE;
    if ((rc = kctl__as_take(r, sent, &in)) != KCTL_OK) return rc;
    if ((rc = kctl__as_namespace(r, &in)) != KCTL_OK) return rc;
    kind = *in.kind ? in.kind : req->res->resource;
    if (create && !in.name_len && in.gen_len) {
#ifndef KCTL_NO_GENERATE_NAME
        uint64_t k; /* a name taken: another suffix (newer API servers try again too) */
        for (k = 0; k < 8; k++) {
            kctl__as_gen_name(&in, req->name_seed + k);
            if (!req->lookup(in.ns, in.name, req->lookup_user_data)) break;
        }
#else
        return KCTL_ERR_UNSUPPORTED; /* no name is made: nothing checked or written */
#endif
    }
    if (patched) {
        cur = patched;
        if (kctl__strcmp(in.name, kctl_obj_name(patched)) != 0)
            return kctl__as_bad_request(r, "the name of the patched object does not match the name on the request");
    } else if (in.name_len) {
        cur = req->lookup(in.ns, in.name, req->lookup_user_data);
    }
    if (create && req->apply && cur) create = false; /* the owner's apply replaces */
#ifndef KCTL_NO_VALIDATION
    kctl__as_err_init(&e, &req->allocator);
    if (!status_only) kctl__as_validate(&e, &r->sc, &in, create, false); /* a status write keeps the stored metadata */
    if (!create && !in.name_len) kctl__as_required(&e, "metadata.name", "name is required");
    if (e.text.err) rc = e.text.err;
    else if (e.n) rc = kctl__as_refuse_invalid(r->st, &req->allocator, req->res, kind, in.name, &e);
    kctl__as_err_free(&e);
    if (rc != KCTL_OK) return rc;
#else
    if (create ? !kctl__as_names_safe(&in) : !in.name_len) /* as the validation's name and namespace checks */
        return kctl__as_invalid_bare(r->st, req->res, kind, in.name);
#endif
    if (create) {
        if (cur) return kctl_apisrv_refuse(KCTL_ERR_EXISTS, req->res, in.name, r->st);
        memset(&m, 0, sizeof m);
        m.name = in.name;
        m.ns = in.ns;
        m.uid = req->uid;
        m.rv = req->rv;
        m.created = req->now;
        m.generation = 1;
        r->d->outcome = KCTL_APISRV_WRITE;
        return kctl__as_emit(r->out, kctl__as_rec(r), sent, &m, sent, req->apply ? KCTL__AS_OWN_STATUS : KCTL_JSON_NONE,
                             &req->allocator);
    }
    if (!cur) return kctl_apisrv_refuse(KCTL_ERR_NOT_FOUND, req->res, in.name, r->st);
    r->d->cur = cur;
    if (!req->apply) { /* the preconditions the document carries: the uid first, as the registry checks them */
        if (*in.uid && kctl__strcmp(in.uid, kctl_obj_uid(cur)) != 0)
            return kctl__as_conflict(r, req->res->resource, false, in.name,
                                     "Precondition failed: UID in precondition: %s, UID in object meta: %s", in.uid, kctl_obj_uid(cur));
        if (*in.rv && kctl__strcmp(in.rv, kctl_obj_resource_version(cur)) != 0)
            return kctl_apisrv_refuse(KCTL_ERR_CONFLICT, req->res, in.name, r->st);
    }
    /* the stored document is parsed for what the rules read of it, unless
       its store kept that (an update of the body, the common write) */
    if (!KCTL_SMALL && !status_only && (rc = kctl__as_cur_known(r, cur, sent, &m, &known_status, &known)) != KCTL_OK) return rc;
    if (!known && (rc = kctl__as_cur_meta(r, cur, &m)) != KCTL_OK) return rc;
    m.rv = req->rv;
    if (req->apply && (m.deleted || in.mv[KCTL__AM_FINALIZERS] == KCTL_JSON_NONE)) {
        /* the owner's apply keeps the finalizers controllers added (unless
           it names them), and never ends a deletion: their cleanup runs */
        m.fin_kept = true;
        if (known && (rc = kctl__as_cur_known_fin(r, cur, &m)) != KCTL_OK) {
            if (rc == KCTL_ERR_NOMEM) return rc;
            kctl__jdoc_free(&r->cur);
            known = false;
            known_status = KCTL_JSON_NONE;
            if ((rc = kctl__as_cur_meta(r, cur, &m)) != KCTL_OK) return rc;
            m.rv = req->rv;
            m.fin_kept = true;
        }
        if (!known) {
            m.fin_doc = &r->cur.j;
            m.fin = kctl_json_member(&r->cur.j, kctl_json_member(&r->cur.j, 0, "metadata"), "finalizers");
        }
    }
    if (!status_only && !m.fin_kept && m.deleted) {
        bool refused;
        if ((rc = kctl__as_new_finalizers(r, &in, kind, cur, &refused)) != KCTL_OK || refused) return rc != KCTL_OK ? rc : KCTL_ERR_INVALID_ARG;
    }
    base = status_only ? &r->cur.j : sent;
    sdoc = status_only ? sent : &r->cur.j;
    status = known ? known_status : kctl_json_member(sdoc, 0, "status");
    if (known) { /* the bodies' fingerprints differ */
        bump = 1;
        if (m.generation < INT64_MAX) m.generation++;
    } else if (!status_only) {
        bump = kctl__as_bumps_generation(sent, &r->cur.j, &req->allocator);
        if (bump < 0) return bump;
        if (bump && m.generation < INT64_MAX) m.generation++;
    }
    nfin = status_only || m.fin_kept ? kctl_obj_finalizer_count(cur) : in.nfinalizers;
    if (m.deleted && nfin == 0) { /* the last finalizer went: so does the object, answered at its old version */
        m.rv = kctl_obj_resource_version(cur);
        r->d->outcome = KCTL_APISRV_REMOVE;
    }
    if ((rc = kctl__as_emit(r->out, kctl__as_rec(r), base, &m, sdoc, status, &req->allocator)) != KCTL_OK ||
        r->d->outcome == KCTL_APISRV_REMOVE)
        return rc;
#if KCTL_SMALL
    { /* a write that changes nothing is not a write (small builds: the
         document written parsed on its own when a compare is due, with
         the caller's limits, else (or refused by them) the default ones,
         as below; for the caller after, as every written one is; a bumped
         generation is a change) */
        int same = 0;
        if (status_only || !bump) {
            kctl__jdoc nd;
            if ((rc = kctl__jdoc_parse(&nd, r->out->buf, r->out->len, &req->allocator, r->keep_lim)) != KCTL_OK &&
                rc != KCTL_ERR_NOMEM && r->keep_lim) {
                kctl__jdoc_free(&nd);
                rc = kctl__jdoc_parse(&nd, r->out->buf, r->out->len, &req->allocator, NULL);
            }
            if (rc == KCTL_OK) same = kctl__as_same(&nd.j, &r->cur.j, &req->allocator);
            kctl__jdoc_free(&nd);
            if (rc != KCTL_OK) return rc;
            if (same < 0) return same;
        }
        r->d->outcome = same ? KCTL_APISRV_UNCHANGED : KCTL_APISRV_WRITE;
        if (same) kctl__as_out_reset(r->out);
    }
#else
    { /* a write that changes nothing is not a write: the document written
         is parsed once, for this and for the caller (keep) */
        kctl__jdoc nd, *od = &nd;
        int same;
        memset(&nd, 0, sizeof nd);
        if (r->keep) {
            if ((rc = kctl__as_keep(r)) != KCTL_OK) return rc;
            if (r->kept) od = r->keep;
        }
        if (od == &nd && (rc = kctl__jdoc_parse(&nd, r->out->buf, r->out->len, &req->allocator, NULL)) != KCTL_OK) {
            kctl__jdoc_free(&nd);
            return rc;
        }
        /* Outside the metadata, the document written is the one sent but
           for its status, which is the stored one: when the generation
           stays, the sent and stored bodies were found equal above, so
           only the metadata is left to compare (small builds compare
           the whole document, which is the same then). */
        if (status_only || (KCTL_SMALL && !bump)) {
            same = kctl__as_same(&od->j, &r->cur.j, &req->allocator);
        } else if (bump) {
            same = 0;
        } else {
            static const char *const md_skip[] = { "resourceVersion" };
            same = kctl__as_equal_except(&od->j, kctl_json_member(&od->j, 0, "metadata"), &r->cur.j,
                                         kctl_json_member(&r->cur.j, 0, "metadata"), md_skip, 1, &req->allocator);
        }
        kctl__jdoc_free(&nd);
        if (same < 0) return same;
        if (same) {
            kctl__as_out_reset(r->out);
            if (r->keep) kctl__jdoc_free(r->keep);
            r->kept = false;
            r->d->outcome = KCTL_APISRV_UNCHANGED;
        } else {
            r->d->outcome = KCTL_APISRV_WRITE;
        }
    }
#endif
    return rc;
}

/* (Under KCTL_NO_MERGE_PATCH, UNSUPPORTED once the object is found and
   the patch read: the refusals before stay.) */
static int kctl__as_patch(kctl__asrun *r) {
    const kctl_apisrv_req *req = r->req;
    const char *ns = req->res->ns ? req->res->ns : "";
    const kctl_obj *cur;
    kctl__jdoc patch;
    size_t len = req->len;
    int rc;
    if (!req->name || !*req->name || !req->json || (req->patch_flags & ~KCTL_PATCH_STATUS)) return KCTL_ERR_INVALID_ARG;
    if (len == KCTL_NTS) len = kctl__strlen(req->json);
    if (!(cur = req->lookup(ns, req->name, req->lookup_user_data))) return kctl_apisrv_refuse(KCTL_ERR_NOT_FOUND, req->res, req->name, r->st);
    if ((rc = kctl__as_parse_body(r, &patch, req->json, len)) != KCTL_OK) {
        kctl__jdoc_free(&patch);
        return rc;
    }
#ifdef KCTL_NO_MERGE_PATCH
    kctl__jdoc_free(&patch);
    return KCTL_ERR_UNSUPPORTED; /* as kctl_json_merge_patch says */
#else
    {
        const char *doc, *text;
        kctl__jdoc cd;
        size_t dlen, n;
        doc = kctl_obj_json(cur, &dlen);
        if ((rc = kctl__jdoc_parse(&cd, doc, dlen, &req->allocator, NULL)) == KCTL_OK) {
            rc = kctl_json_merge_patch(&cd.j, 0, &patch.j, 0, &r->mbuf);
            if (rc == KCTL_OK) rc = kctl_jw_finish(&r->mbuf, &text, &n);
            if (rc == KCTL_ERR_TOO_LARGE && r->st) /* deeper than a document may be */
                rc = kctl__as_simple(r->st, &req->allocator, 413, "RequestEntityTooLarge",
                                     "Request entity too large: the patched object is beyond the writer's depth");
            else if (rc == KCTL_OK) rc = kctl__as_parse_body(r, &r->merged, text, n);
        }
        kctl__jdoc_free(&cd);
        kctl__jdoc_free(&patch);
        if (rc != KCTL_OK) return rc;
    }
    return kctl__as_write(r, &r->merged.j, req->patch_flags & KCTL_PATCH_STATUS ? KCTL_VERB_UPDATE_STATUS : KCTL_VERB_UPDATE, cur);
#endif
}

static int kctl__as_remove(kctl__asrun *r) {
    const kctl_apisrv_req *req = r->req;
    const char *ns = req->res->ns ? req->res->ns : "";
    const kctl_obj *cur;
    kctl__asmeta m;
    char kbuf[256];
    const char *kind;
    int rc, p;
    if (!req->name || !*req->name) return KCTL_ERR_INVALID_ARG;
    if (!(cur = req->lookup(ns, req->name, req->lookup_user_data))) return kctl_apisrv_refuse(KCTL_ERR_NOT_FOUND, req->res, req->name, r->st);
    r->d->cur = cur;
    if ((rc = kctl__as_cur_meta(r, cur, &m)) != KCTL_OK) return rc;
    kind = kctl_json_string(&r->cur.j, kctl_json_member(&r->cur.j, 0, "kind"), kbuf, sizeof kbuf, NULL) == KCTL_OK && kbuf[0]
               ? kbuf : req->res->resource;
    for (p = 0; req->del && p < 2; p++) { /* the preconditions: the uid, then the resourceVersion */
        const char *want = p ? req->del->resource_version : req->del->uid, *have = p ? kctl_obj_resource_version(cur) : kctl_obj_uid(cur);
        if (want && *want && kctl__strcmp(want, have) != 0)
            return kctl__as_conflict(r, kind, true, req->name,
                                     p ? "the ResourceVersion in the precondition (%s) does not match the ResourceVersion in record (%s). "
                                         "The object might have been modified"
                                       : "the UID in the precondition (%s) does not match the UID in record (%s). "
                                         "The object might have been deleted and then recreated", want, have);
    }
    if (kctl_obj_finalizer_count(cur) == 0) {
        r->d->outcome = KCTL_APISRV_REMOVE;
        return KCTL_OK;
    }
    if (m.deleted) { /* already marked: nothing more to do */
        r->d->outcome = KCTL_APISRV_UNCHANGED;
        return KCTL_OK;
    }
    m.rv = req->rv;
    m.deleted = req->now ? req->now : "";
    m.has_grace = true;
    m.grace = 0;
    if (m.generation > 0 && m.generation < INT64_MAX) m.generation++; /* markAsDeleting: a deletion is a change of intent */
    r->d->outcome = KCTL_APISRV_WRITE;
    return kctl__as_emit(r->out, kctl__as_rec(r), &r->cur.j, &m, &r->cur.j, KCTL__AS_OWN_STATUS, &req->allocator);
}

/* kctl_apisrv_decide, and (keep not NULL) the document written to out
   parsed with keep_lim into *keep, which the caller frees with
   kctl__jdoc_free whatever the result: a store builds the object it keeps
   from it without parsing it again. *keep_rc: OK, or what that parse
   returned (TOO_LARGE, PROTO; keep then holds no tokens). cur_of (may be
   NULL): what the store kept of an object lookup gave (kctl__as_cur_of
   of its document; NULL: nothing), so an update need not parse it.
   *body_fp_ok (may be NULL): *body_fp is the fingerprint of the body of
   the document written (that of the body sent: an update's). pre (may be
   NULL): the sent document as kctl__as_pre read it, taken from it. */
static int kctl__as_decide(const kctl_apisrv_req *req, kctl_jw *out, kctl_apisrv_decision *d, kctl_api_status *st,
                           kctl__jdoc *keep, const kctl_json_limits *keep_lim, int *keep_rc,
                           const kctl__ascur *(*cur_of)(const kctl_obj *cur, void *lookup_user_data), bool *body_fp_ok,
                           uint64_t *body_fp, kctl__aspre *pre);

KCTL_API int kctl_apisrv_decide(const kctl_apisrv_req *req, kctl_jw *out, kctl_apisrv_decision *d, kctl_api_status *st) {
    return kctl__as_decide(req, out, d, st, NULL, NULL, NULL, NULL, NULL, NULL, NULL);
}

static int kctl__as_decide(const kctl_apisrv_req *req, kctl_jw *out, kctl_apisrv_decision *d, kctl_api_status *st,
                           kctl__jdoc *keep, const kctl_json_limits *keep_lim, int *keep_rc,
                           const kctl__ascur *(*cur_of)(const kctl_obj *cur, void *lookup_user_data), bool *body_fp_ok,
                           uint64_t *body_fp, kctl__aspre *pre) {
    kctl__asrun r;
    size_t len;
    int rc = KCTL_ERR_INVALID_ARG;
    if (keep) memset(keep, 0, sizeof *keep);
    if (keep_rc) *keep_rc = KCTL_OK;
    if (d) memset(d, 0, sizeof *d);
    if (!req || !out || !d || !req->res || !req->res->resource || !*req->res->resource || !req->lookup ||
        (!req->allocator.alloc_fn) != (!req->allocator.free_fn))
        return KCTL_ERR_INVALID_ARG;
#if KCTL_SMALL
    memset(&r, 0, sizeof r);
#else
    memset(&r, 0, offsetof(kctl__asrun, sc_own)); /* (sc_own last: nothing read there before it is written) */
#endif
    r.req = req;
    r.out = out;
    r.d = d;
    r.st = st;
    r.keep = keep;
    r.keep_lim = keep_lim;
    r.cur_of = cur_of;
#ifndef KCTL_NO_MERGE_PATCH
    kctl_jw_init_growable(&r.mbuf, &req->allocator);
#endif
    switch (req->verb) {
    case KCTL_VERB_CREATE:
    case KCTL_VERB_UPDATE:
    case KCTL_VERB_UPDATE_STATUS:
        if (!req->json) break;
        len = req->len == KCTL_NTS ? kctl__strlen(req->json) : req->len;
        if (!KCTL_SMALL && pre && pre->parsed && pre->json == req->json && pre->len == len) { /* read before: taken */
            r.sent = pre->sent;
            memset(&pre->sent, 0, sizeof pre->sent);
            pre->parsed = false;
            r.sent_fp = pre->fp;
            r.sent_fp_pre = pre->fp_ok;
            rc = KCTL_OK;
        } else {
            rc = kctl__as_parse_body(&r, &r.sent, req->json, len);
        }
        if (rc == KCTL_OK) rc = kctl__as_write(&r, &r.sent.j, req->verb, NULL);
        break;
    case KCTL_VERB_PATCH: rc = kctl__as_patch(&r); break;
    case KCTL_VERB_REMOVE: rc = kctl__as_remove(&r); break;
    default: break;
    }
#if KCTL_SMALL /* (small builds: kctl__as_keep's parse here, the only one) */
    if (rc == KCTL_OK && keep && out->len && d->outcome != KCTL_APISRV_UNCHANGED &&
        (rc = kctl__jdoc_parse(keep, out->buf, out->len, &req->allocator, keep_lim)) != KCTL_OK && rc != KCTL_ERR_NOMEM) {
        kctl__jdoc_free(keep); /* refused by the limits: the caller's to say */
        r.keep_rc = rc;
        rc = KCTL_OK;
    }
#else
    if (rc == KCTL_OK && keep && out->len && d->outcome != KCTL_APISRV_UNCHANGED) rc = kctl__as_keep(&r);
#endif
    if (rc != KCTL_OK) {
        kctl__as_out_reset(out);
        memset(d, 0, sizeof *d);
        if (keep) kctl__jdoc_free(keep);
        r.keep_rc = KCTL_OK;
    }
    if (keep_rc) *keep_rc = r.keep_rc;
    if (body_fp_ok) *body_fp_ok = rc == KCTL_OK && r.sent_fp_ok;
    if (body_fp) *body_fp = r.sent_fp;
    KCTL__AS_SC_FREE(&r, &req->allocator);
    kctl__jdoc_free(&r.sent);
    kctl__jdoc_free(&r.cur);
    if (!KCTL_SMALL) kctl__jdoc_free(&r.curfin); /* (small builds: never used) */
#ifndef KCTL_NO_MERGE_PATCH
    kctl__jdoc_free(&r.merged);
    kctl_jw_free(&r.mbuf);
#endif
    if (!KCTL_SMALL) kctl__at_free(&r.toks);
    return rc;
}

KCTL_API int kctl_apisrv_check(const kctl_resource *res, const kctl_obj *obj, const kctl_allocator *allocator, kctl_api_status *st) {
    kctl__asrun r;
    kctl_apisrv_req req;
    kctl__asin in;
#ifndef KCTL_NO_VALIDATION
    kctl__aserr e;
#endif
    const char *doc;
    size_t len;
    int rc;
    if (!res || !res->resource || !obj) return KCTL_ERR_INVALID_ARG;
    if (allocator && (!allocator->alloc_fn) != (!allocator->free_fn)) return KCTL_ERR_INVALID_ARG;
    memset(&req, 0, sizeof req);
    req.res = res;
    if (allocator) req.allocator = *allocator;
    memset(&r, 0, sizeof r);
    r.req = &req;
    r.st = st;
    doc = kctl_obj_json(obj, &len);
    req.limits.max_depth = KCTL__JSON_DEPTH_CAP; /* it is an object already: whatever limits made it */
    req.limits.max_bytes = UINT32_MAX - 1;
    if ((rc = kctl__jdoc_parse(&r.sent, doc, len, &req.allocator, &req.limits)) == KCTL_OK && (rc = kctl__as_take(&r, &r.sent.j, &in)) == KCTL_OK) {
#ifndef KCTL_NO_VALIDATION
        kctl__as_err_init(&e, &req.allocator);
        kctl__as_validate(&e, &r.sc, &in, true, true);
        if (e.text.err) rc = e.text.err;
        else if (e.n) rc = kctl__as_refuse_invalid(st, &req.allocator, res, *in.kind ? in.kind : res->resource, kctl_obj_name(obj), &e);
        kctl__as_err_free(&e);
#else
        if (!kctl__as_names_safe(&in))
            rc = kctl__as_invalid_bare(st, res, *in.kind ? in.kind : res->resource, kctl_obj_name(obj));
#endif
    }
    KCTL__AS_SC_FREE(&r, &req.allocator);
    kctl__jdoc_free(&r.sent);
    return rc;
}


KCTL_API int kctl_apisrv_with_rv(const kctl_obj *obj, const char *rv, const kctl_obj_opts *opts, kctl_obj **out) {
    size_t len;
    const char *doc = kctl_obj_json(obj, &len); /* (no obj: NULL, which kctl_apisrv_parse_at refuses) */
    return kctl_apisrv_parse_at(doc, len, rv, opts, out);
}

KCTL_API int kctl_apisrv_parse_at(const char *doc, size_t len, const char *rv, const kctl_obj_opts *opts, kctl_obj **out) {
    kctl__jdoc d;
    kctl_jw w;
    const char *text;
    size_t n;
    int rc;
    kctl_allocator a;
    kctl__asmeta m;
    if (out) *out = NULL;
    if (!doc || !out) return KCTL_ERR_INVALID_ARG;
    if (len == KCTL_NTS) len = kctl__strlen(doc);
    memset(&a, 0, sizeof a);
    if (opts) a = opts->allocator;
    if ((rc = kctl__jdoc_parse(&d, doc, len, &a, opts ? &opts->limits : NULL)) != KCTL_OK) {
        kctl__jdoc_free(&d);
        return rc;
    }
    if (kctl_json_type_of(&d.j, 0) != KCTL_JSON_OBJECT) {
        kctl__jdoc_free(&d);
        return KCTL_ERR_PROTO;
    }
    /* in the order the rules write: apiVersion, kind, metadata (rv last), the rest */
    memset(&m, 0, sizeof m);
    m.as_is = true;
    m.rv = rv;
    kctl_jw_init_growable(&w, &a);
    if ((rc = kctl__as_emit(&w, NULL, &d.j, &m, &d.j, KCTL_JSON_NONE, &a)) == KCTL_OK && (rc = kctl_jw_finish(&w, &text, &n)) == KCTL_OK)
        rc = kctl_obj_parse(text, n, opts, out);
    kctl_jw_free(&w);
    kctl__jdoc_free(&d);
    return rc;
}

/* ---------------------------------------------------- >>memstore MEMSTORE */
#ifdef KCTL_NO_MEMSTORE
/* Compiled out: creating a store says UNSUPPORTED; the rest, which can
   only be given the NULL that create leaves, do nothing. */
KCTL_API int kctl_memstore_create(const kctl_memstore_desc *desc, kctl_memstore **out) {
    (void)desc;
    if (out) *out = NULL;
    return KCTL_ERR_UNSUPPORTED;
}
KCTL_API void kctl_memstore_destroy(kctl_memstore *ms) { (void)ms; }
KCTL_API kctl_transport kctl_memstore_transport(kctl_memstore *ms) {
    kctl_transport t;
    (void)ms;
    memset(&t, 0, sizeof t);
    return t;
}
KCTL_API int kctl_memstore_apply(kctl_memstore *ms, const kctl_resource *res, const char *json, size_t len, kctl_obj **out,
                                 kctl_api_status *st) {
    (void)ms; (void)res; (void)json; (void)len; (void)st;
    if (out) *out = NULL;
    return KCTL_ERR_UNSUPPORTED;
}
KCTL_API int kctl_memstore_delete(kctl_memstore *ms, const kctl_resource *res, const char *name, kctl_api_status *st) {
    (void)ms; (void)res; (void)name; (void)st;
    return KCTL_ERR_UNSUPPORTED;
}
KCTL_API int kctl_memstore_get(kctl_memstore *ms, const kctl_resource *res, const char *name, kctl_obj **out, kctl_api_status *st) {
    (void)ms; (void)res; (void)name; (void)st;
    if (out) *out = NULL;
    return KCTL_ERR_UNSUPPORTED;
}
KCTL_API uint64_t kctl_memstore_revision(kctl_memstore *ms) { (void)ms; return 0; }
KCTL_API int kctl_memstore_compact(kctl_memstore *ms, uint64_t rev) { (void)ms; (void)rev; return KCTL_ERR_UNSUPPORTED; }
KCTL_API int kctl_memstore_save(kctl_memstore *ms) { (void)ms; return KCTL_ERR_UNSUPPORTED; }
KCTL_API int kctl_memstore_flush(kctl_memstore *ms, uint64_t *next_ns) {
    (void)ms;
    if (next_ns) *next_ns = UINT64_MAX;
    return KCTL_ERR_UNSUPPORTED;
}
KCTL_API int kctl_memstore_fail_next(kctl_memstore *ms, kctl_verb verb, uint32_t n, int code) {
    (void)ms; (void)verb; (void)n; (void)code;
    return KCTL_ERR_UNSUPPORTED;
}
KCTL_API void kctl_memstore_break_watches_after(kctl_memstore *ms, uint32_t n) { (void)ms; (void)n; }
KCTL_API void kctl_memstore_set_latency(kctl_memstore *ms, uint64_t latency_ns) { (void)ms; (void)latency_ns; }
KCTL_API int kctl_memstore_read_stats(kctl_memstore *ms, kctl_memstore_stats *out) {
    (void)ms;
    if (out) memset(out, 0, sizeof *out);
    return KCTL_ERR_UNSUPPORTED;
}
KCTL_API int kctl_memstore_read_persist_stats(kctl_memstore *ms, kctl_memstore_persist_stats *out) {
    (void)ms;
    if (out) memset(out, 0, sizeof *out);
    return KCTL_ERR_UNSUPPORTED;
}
KCTL_API kctl_fs kctl_fs_posix(void) { /* the memstore's file layer: none here */
    kctl_fs fs;
    memset(&fs, 0, sizeof fs);
    return fs;
}
#else
/* Objects in one map keyed "group/resource|namespace/name"; events in a
   ring of the last `history` writes, in revision order. */
typedef struct kctl__msent {
    kctl__node node; /* the storage key, stored right after the entry */
    kctl_obj *obj;
    uint32_t rid_len; /* the "group/resource" prefix */
    kctl__ascur cur;  /* what the rules read of obj, kept by the write that stored it (cur.obj != obj: nothing) */
} kctl__msent;

/* A "group/resource" events name, kept once: its string right after it
   (one allocation), as an entry's key. */
typedef struct kctl__msrid {
    struct kctl__msrid *next;
} kctl__msrid;

typedef struct kctl__msev {
    uint64_t rev;
    int type;
    kctl_obj *obj;  /* the state after (DELETED: the last state) */
    kctl_obj *prev; /* the state before (MODIFIED, DELETED), for selector transitions */
    kctl_obj *left; /* prev at this event's revision: what a watcher whose selector it leaves gets (made when first needed) */
    char *rid;      /* "group/resource": the store's copy (ms->rids), shared */
} kctl__msev;

/* A write about to be made, for the save that must precede it: entry e's
   object becomes obj (NULL: e goes), or, without e, obj is new (in rid). */
typedef struct kctl__mspending {
    kctl__msent *e;
    const kctl_obj *obj;
    const char *rid;
    uint64_t seq; /* the uid sequence after the write */
} kctl__mspending;

/* The journal (save_on_write; see PERSISTENCE above kctl_memstore_desc):
   its file, open from the first append; what has been appended (seq,
   records counted since create) and what is durable (synced); group
   commit: one writer at a time fsyncs (syncing) without the store's
   lock, the others wait on cv and share its fsync. Lock held for all. */
typedef struct kctl__jnl {
    kctl_fs fs;
    kctl_logger logger;
    char *jpath;            /* "<file>.journal" (the file: links resolved at create) */
    int fd;                 /* -1: not open */
    kctl_memstore_sync sync;
    uint64_t interval_ns, last_sync_ns;
    uint64_t size;          /* the journal's valid length: the next record goes here */
    uint64_t file_len;      /* its length on disk at load (past size: a tail to cut) */
    bool exists;            /* a journal file is there (or was at load) */
    bool have_snap;         /* a snapshot is at path (the first append writes one) */
    uint64_t compact_bytes, snap_bytes;
    uint64_t seq, synced;   /* records appended, and durable */
    bool syncing, broken;   /* broken: a failed fsync or cut; writes wait for a snapshot */
    kctl__cond cv;          /* a sync done, a snapshot made; the flusher's wake-up */
    bool flusher_on, flusher_stop;
#ifndef KCTL_NO_THREADS
    kctl__thread flusher;   /* SYNC_INTERVAL on a real-time clock: syncs on time (kctl__jnl_flusher) */
#endif
    kctl_memstore_persist_stats st;
} kctl__jnl;

/* A list's or watch's selector let go (without selectors none is made:
   kctl__ms_read_req). */
#ifdef KCTL_NO_SELECTORS
#define KCTL__MS_SEL_FREE(s) ((void)(s))
#else
#define KCTL__MS_SEL_FREE(s) kctl_selector_free(s)
#endif

/* The memstore's watch (a kctl_watch to the outside: the name stays free
   for a transport of your own in the same file). */
/* How many events a watch_next takes at most in one hold of the store's
   lock (small builds: one, no room kept). A watcher draining a backlog
   took the lock once per event, against the writer, and searched the
   ring each time. */
#if KCTL_SMALL || !(defined(KCTL__HINTS) || defined(KCTL_NO_THREADS))
#define KCTL__MS_BATCH 0
#else
#define KCTL__MS_BATCH 32
#ifdef KCTL__HINTS /* the flag a compaction raises: read without the lock */
#define KCTL__MS_FLAG_GET(p) KCTL__LOAD(p)
#define KCTL__MS_FLAG_SET(p, v) KCTL__STORE((p), (v))
#else
#define KCTL__MS_FLAG_GET(p) (*(p))
#define KCTL__MS_FLAG_SET(p, v) (*(p) = (v))
#endif
#endif

typedef struct kctl__msw {
    kctl_memstore *ms;
    char rid[256];
#if !KCTL_SMALL
    const char *irid; /* the store's copy of rid if it had one at open (then an event of rid has that one), else NULL */
#endif
    char ns[256];
    kctl_selector *sel;
    uint64_t pos;         /* the last revision this watcher went past */
    kctl_obj_list initial; /* from_rv "": the objects there at open */
    size_t initial_next;
    uint32_t since_bookmark, delivered, break_after;
    uint64_t last_emit_ns; /* on the store's clock: the last event or bookmark */
    bool broken;
    kctl_wake wake;        /* watch_notify's (under the store's lock), and the list */
    struct kctl__msw *wnext; /* of the watches that have one (closing one walks it: rare, unlike the wake-ups) */
#if KCTL__MS_BATCH
    /* A watcher behind takes the events after the one it asked for too,
       up to KCTL__MS_BATCH, in the same hold of the lock; its next calls
       hand them out without it (pos is past them already, bpos is the
       last one handed out). A compaction past bfrom (the last one handed
       out when they were taken; under the lock) raises bdrop: the rest
       are let go and read again from bpos, so GONE comes exactly as it
       does one event at a time. */
    uint32_t bnext, bcount, bdrop;
    uint64_t bfrom, bpos;
    struct kctl__msw *anext; /* every watch of the store (under its lock) */
    struct { uint64_t rev; int type; kctl_obj *obj; } batch[KCTL__MS_BATCH];
#endif
} kctl__msw;

/* Whether the store keeps a bound (max_objects, max_bytes) and so counts
   the bytes it holds at every write; KCTL_NO_MEMSTORE_BOUND: neither (a
   bound is UNSUPPORTED at create; the stats count the bytes when read). */
#ifdef KCTL_NO_MEMSTORE_BOUND
#define KCTL__MS_BOUND 0
#else
#define KCTL__MS_BOUND 1
#endif

/* Whether generateName suffixes are made (the rules read name_seed only
   then): without them the store keeps no seed. */
#ifdef KCTL_NO_GENERATE_NAME
#define KCTL__MS_GEN 0
#else
#define KCTL__MS_GEN 1
#endif

/* Whether a save can succeed: without files none does (a write to save
   is refused before it is made). */
#ifdef KCTL_NO_FILES
#define KCTL__MS_SAVES 0
#else
#define KCTL__MS_SAVES 1
#endif

#define KCTL__MS_PAGED 8 /* paged lists remembered at once */
typedef struct kctl__mspaged {
    kctl_obj **v;      /* the objects of the pages still to come */
    size_t n;
    uint64_t rev;      /* the list's version */
    uint64_t used;     /* for least-recently-used */
    char id[512];      /* resource, namespace and selectors: "" = free */
} kctl__mspaged;

struct kctl_memstore {
    kctl__mutex mu;
    kctl__cond cv;
    kctl_allocator allocator;
    kctl_clock clock;
    kctl_obj_opts obj_opts;
    uint32_t bookmark_every;
    uint64_t bookmark_interval_ns, latency_ns;
    kctl__map objs;
    kctl__msev *ring;
    uint32_t cap, count, first; /* ring: count events from index first */
    uint32_t history;           /* the most events the ring grows to */
    uint32_t max_objects;       /* 0: no bound */
    size_t max_bytes, nbytes;   /* bound (0: none) and bytes of the stored documents */
    uint64_t refused_full;
    kctl_logger logger;
    kctl__msrid *rids;          /* every "group/resource" an event named: events share them */
    uint64_t rev, compacted;    /* events with rev <= compacted are gone */
    uint64_t uid_seq;
    uint64_t name_seed;         /* generateName suffixes: from the clock and the address at create, then counted */
    uint64_t now_s;             /* the wall clock's second now_text says (0: none yet) */
    char now_text[32];          /* kctl_apisrv_now's text of that second: formatted once a second, not per write */
    uint64_t uid_text_seq;      /* the uid sequence number uid_text is of (0: none yet) */
    char uid_text[48];          /* the uid a create would take next: formatted once a create, not per write */
    uint32_t fail_n[KCTL_VERB_COUNT];
    int fail_code[KCTL_VERB_COUNT];
    uint32_t break_after;
    uint32_t waiters;
    bool wake_due;     /* a write pushed an event with watches waiting: kctl__ms_unlock wakes them */
    kctl__msev dropped; /* the event the last write pushed out of the history: freed after the lock */
    kctl__msw *woken; /* the watches with a wake-up (watch_notify), under mu */
#if KCTL__MS_BATCH
    kctl__msw *watches; /* all of them, under mu (a compaction tells those holding events) */
#endif
    char *path;
    bool save_on_write;
    kctl__jnl jnl;
    /* paged lists in progress: each remembers every object it matched,
       sorted, as of its revision; its next pages (tokens "rev:key") come
       from there (one snapshot, as an API server's are) until its last
       page is handed out. The least recently used goes first when more
       are in progress; a token of one forgotten is GONE, unless nothing
       was written since (then the store as it is is its snapshot). */
#ifndef KCTL_NO_PAGING
    kctl__mspaged paged[KCTL__MS_PAGED];
    uint64_t paged_tick;
#endif
};

#ifndef KCTL_NO_PAGING
static void kctl__ms_pg_drop(kctl_memstore *ms, kctl__mspaged *pg) {
    size_t i;
    for (i = 0; i < pg->n; i++) kctl_obj_unref(pg->v[i]);
    kctl__free(&ms->allocator, pg->v);
    memset(pg, 0, sizeof *pg);
}
#endif

static int kctl__ms_load(kctl_memstore *ms);
static int kctl__jnl_init(kctl_memstore *ms, const kctl_memstore_desc *d);
static void kctl__jnl_deinit(kctl_memstore *ms);
static int kctl__jnl_append(kctl_memstore *ms, uint64_t rev, const kctl__mspending *p);
static int kctl__jnl_durable(kctl_memstore *ms, uint64_t seq);
#ifndef KCTL_NO_THREADS
static void *kctl__jnl_flusher(void *arg);
#endif

/* A name, namespace, group or resource the store can hold: non-empty
   (unless empty_ok), no '/', '|', spaces or control characters (Kubernetes
   names are narrower still; these are what would make keys ambiguous). */
static bool kctl__ms_name_ok(const char *s, bool empty_ok) {
    size_t n = 0;
    if (!s || !*s) return empty_ok;
    for (; *s; s++, n++)
        if ((unsigned char)*s <= ' ' || *s == '/' || *s == '|' || *s == 0x7f || n >= 253) return false;
    return true;
}

/* A new entry for storage key `key` holding obj (not yet in the map; the
   map has room after kctl__map_reserve). NULL on NOMEM. */
static kctl__msent *kctl__ms_entry(kctl_memstore *ms, const char *key, size_t rid_len, kctl_obj *obj) {
    size_t klen = kctl__strlen(key);
    kctl__msent *e;
    if (kctl__map_reserve(&ms->objs, &ms->allocator) != KCTL_OK ||
        !(e = (kctl__msent *)kctl__alloc(&ms->allocator, sizeof *e + klen + 1)))
        return NULL;
    kctl__memcpy(e + 1, key, klen + 1);
    e->node.key = (const char *)(e + 1);
    e->node.len = (uint32_t)klen;
    e->node.hash = kctl__hash(key, klen);
    e->rid_len = (uint32_t)rid_len;
    e->obj = obj;
    memset(&e->cur, 0, sizeof e->cur);
    return e;
}

/* Take an entry out of the store and free it (its object reference too). */
static size_t kctl__ms_doc_len(const kctl_obj *o) {
    size_t n = 0;
    if (o) kctl_obj_json(o, &n);
    return n;
}

/* ms->nbytes from the objects held (after a load). */
static void kctl__ms_count_bytes(kctl_memstore *ms) {
    size_t i;
    ms->nbytes = 0;
    for (i = 0; i < ms->objs.cap; i++)
        if (ms->objs.slots[i].node) ms->nbytes += kctl__ms_doc_len(((kctl__msent *)ms->objs.slots[i].node)->obj);
}

static int kctl__ms_refuse(kctl_api_status *st, int code, const char *what);

/* Whether the store may hold made in place of old (NULL: a new object)
   within max_objects and max_bytes: OK, or FULL (counted, logged, the
   Status filled). Lock held. */
static int kctl__ms_budget(kctl_memstore *ms, const kctl_obj *old, const kctl_obj *made, kctl_api_status *st) {
    size_t add, sub;
    bool full;
    if (!KCTL__MS_BOUND) return KCTL_OK; /* no bound (KCTL_NO_MEMSTORE_BOUND) */
    add = kctl__ms_doc_len(made);
    sub = kctl__ms_doc_len(old);
    full = !old && ms->max_objects && ms->objs.count >= ms->max_objects;
    /* (nbytes + add cannot wrap: both count documents in memory now) */
    if (ms->max_bytes && add > sub && ms->nbytes + (add - sub) > ms->max_bytes) full = true;
    if (!full) return KCTL_OK;
    ms->refused_full++;
    kctl__log(&ms->logger, KCTL_LOG_WARN, KCTL_LOGITEM_MEMSTORE_FULL);
    return kctl__ms_refuse(st, KCTL_ERR_FULL, "the store is full (max_objects or max_bytes), so the write was not made");
}

static void kctl__ms_drop(kctl_memstore *ms, kctl__msent *e) {
    if (KCTL__MS_BOUND) ms->nbytes -= kctl__ms_doc_len(e->obj);
    kctl_obj_unref(e->obj);
    kctl__map_remove(&ms->objs, &ms->allocator, &e->node);
    kctl__free(&ms->allocator, e);
}

/* buf[0..cap) = a sep1 b sep2 c (sep 0: none; NULL strings: ""): OK, or
   INVALID_ARG when it does not fit. Every write formats keys: no printf. */
static int kctl__ms_join(char *buf, size_t cap, const char *a, char sep1, const char *b, char sep2, const char *c) {
    const char *part[5];
    char sep[4]; /* the separators as strings: every part copied alike */
    size_t used = 0, i, n;
    sep[0] = sep1; sep[1] = '\0'; sep[2] = sep2; sep[3] = '\0';
    part[0] = a; part[1] = sep; part[2] = b; part[3] = sep + 2; part[4] = c;
    for (i = 0; i < 5; i++) {
        n = part[i] ? kctl__strlen(part[i]) : 0;
        if (used + n >= cap) return KCTL_ERR_INVALID_ARG;
        if (n) kctl__memcpy(buf + used, part[i], n);
        used += n;
    }
    buf[used] = '\0';
    return KCTL_OK;
}

static int kctl__ms_rid(const kctl_resource *res, char *buf, size_t cap) {
    if (!res || !kctl__ms_name_ok(res->resource, false) || !kctl__ms_name_ok(res->group, true) ||
        !kctl__ms_name_ok(res->ns, true))
        return KCTL_ERR_INVALID_ARG;
    return kctl__ms_join(buf, cap, res->group, '/', res->resource, 0, NULL);
}

/* The storage key of ns/name in rid. */
static int kctl__ms_key(const char *rid, const char *ns, const char *name, char *buf, size_t cap) {
    return ns && *ns ? kctl__ms_join(buf, cap, rid, '|', ns, '/', name) : kctl__ms_join(buf, cap, rid, '|', name, 0, NULL);
}

static kctl__msent *kctl__ms_find(kctl_memstore *ms, const char *key) {
    size_t len = kctl__strlen(key);
    return (kctl__msent *)kctl__map_find(&ms->objs, key, len, kctl__hash(key, len));
}

/* A fault armed for verb: its code (and one fewer left), or OK. */
#ifndef KCTL_NO_FAULTS
static int kctl__ms_fault(kctl_memstore *ms, kctl_verb verb) {
#ifndef KCTL_NO_THREADS
    if (ms->latency_ns) { /* a slow store: wait, without the lock */
        uint64_t ns = ms->latency_ns;
        kctl__mutex_unlock(&ms->mu);
        kctl__port_sleep_ns(ns);
        kctl__mutex_lock(&ms->mu);
    }
#endif
    if (!ms->fail_n[verb]) return KCTL_OK;
    ms->fail_n[verb]--;
    return ms->fail_code[verb];
}
#endif

KCTL_API int kctl_memstore_create(const kctl_memstore_desc *desc, kctl_memstore **out) {
    kctl_memstore_desc d;
    kctl_memstore *ms;
    if (!out) return KCTL_ERR_INVALID_ARG;
    *out = NULL;
    memset(&d, 0, sizeof d);
    if (desc) kctl__memcpy(&d, desc, sizeof d); /* (not d = *desc: see kctl__own_memcpy) */
    if ((!d.allocator.alloc_fn) != (!d.allocator.free_fn)) return KCTL_ERR_INVALID_ARG;
    if (!d.history) d.history = 1024;
    if (d.obj_opts.limits.max_depth > KCTL_JSON_MAX_DEPTH) return KCTL_ERR_INVALID_ARG; /* the writer's depth: a kept object must be writable */
    if (!KCTL__MS_BOUND && (d.max_objects || d.max_bytes)) return KCTL_ERR_UNSUPPORTED; /* a part compiled out (KCTL_NO_MEMSTORE_BOUND) */
    if (!KCTL__OBJ_CODECS && d.obj_opts.codec.decode) return KCTL_ERR_UNSUPPORTED; /* (KCTL_NO_CODEC: every write would be) */
#ifdef KCTL_NO_FILES
    if (d.path) return KCTL_ERR_INVALID_ARG; /* no file to load or save (what the load would answer) */
#endif
    if (!(ms = (kctl_memstore *)kctl__alloc(&d.allocator, sizeof *ms))) return KCTL_ERR_NOMEM;
    memset(ms, 0, sizeof *ms);
    ms->allocator = d.allocator;
    ms->clock = d.clock.now_fn ? d.clock : kctl_clock_monotonic();
    if (KCTL__MS_GEN) ms->name_seed = kctl__port_wall_ns() ^ (uint64_t)(uintptr_t)ms;
    ms->obj_opts = d.obj_opts;
    if (!ms->obj_opts.allocator.alloc_fn) ms->obj_opts.allocator = d.allocator;
    ms->bookmark_every = d.bookmark_every;
    ms->bookmark_interval_ns = d.bookmark_interval_ns;
    ms->history = d.history;
    ms->max_objects = d.max_objects;
    ms->max_bytes = d.max_bytes;
    ms->logger = d.logger;
    if (kctl__mutex_init(&ms->mu) != KCTL_OK) goto fail;
    if (kctl__cond_init(&ms->cv) != KCTL_OK) {
        kctl__mutex_deinit(&ms->mu);
        goto fail;
    }
    ms->save_on_write = d.save_on_write;
    if (kctl__jnl_init(ms, &d) != KCTL_OK) {
        kctl_memstore_destroy(ms);
        return KCTL_ERR_INVALID_ARG;
    }
    if (d.path) { /* never under KCTL_NO_FILES (above) */
        size_t n = kctl__strlen(d.path);
        int rc;
        if (!(ms->path = (char *)kctl__alloc(&d.allocator, n + 1))) {
            kctl_memstore_destroy(ms);
            return KCTL_ERR_NOMEM;
        }
        kctl__memcpy(ms->path, d.path, n + 1);
        if ((rc = kctl__ms_load(ms)) != KCTL_OK) {
            kctl_memstore_destroy(ms);
            return rc;
        }
        kctl__ms_count_bytes(ms);
#ifndef KCTL_NO_THREADS
        if (ms->save_on_write && ms->jnl.sync == KCTL_MEMSTORE_SYNC_INTERVAL && !ms->clock.subscribe_fn) {
            if ((rc = kctl__thread_start(&ms->jnl.flusher, kctl__jnl_flusher, ms)) != KCTL_OK) {
                kctl_memstore_destroy(ms);
                return rc;
            }
            ms->jnl.flusher_on = true;
        }
#endif
    }
    *out = ms;
    return KCTL_OK;
fail:
    kctl__free(&d.allocator, ms);
    return KCTL_ERR_NOMEM;
}

/* Call every registered wake-up (watch_notify); mu held. */
static void kctl__ms_wake(kctl_memstore *ms) {
    kctl__msw *w;
    for (w = ms->woken; w; w = w->wnext) w->wake.fn(w->wake.user_data);
}

static void kctl__ms_free_event(kctl_memstore *ms, kctl__msev *e) {
    (void)ms;
    kctl_obj_unref(e->obj);
    kctl_obj_unref(e->prev);
    kctl_obj_unref(e->left);
    memset(e, 0, sizeof *e); /* e->rid is the store's (ms->rids) */
}

KCTL_API void kctl_memstore_destroy(kctl_memstore *ms) {
    size_t i;
    uint32_t k;
    if (!ms) return;
    for (i = 0; i < ms->objs.cap; i++) {
        kctl__msent *e = (kctl__msent *)ms->objs.slots[i].node;
        if (!e) continue;
        kctl_obj_unref(e->obj);
        kctl__free(&ms->allocator, e);
    }
    kctl__free(&ms->allocator, ms->objs.slots);
#ifndef KCTL_NO_PAGING
    for (k = 0; k < KCTL__MS_PAGED; k++) kctl__ms_pg_drop(ms, &ms->paged[k]);
#endif
    for (k = 0; k < ms->cap; k++) kctl__ms_free_event(ms, &ms->ring[k]); /* (the slots without an event: zero) */
    if (!KCTL_SMALL) kctl__ms_free_event(ms, &ms->dropped); /* (small builds: never one, freed under the lock) */
    kctl__free(&ms->allocator, ms->ring);
#ifndef KCTL_NO_THREADS
    if (ms->jnl.flusher_on) {
        kctl__mutex_lock(&ms->mu);
        ms->jnl.flusher_stop = true;
        kctl__cond_broadcast(&ms->jnl.cv);
        kctl__mutex_unlock(&ms->mu);
        kctl__thread_join(ms->jnl.flusher);
        ms->jnl.flusher_on = false;
    }
#endif
    kctl__jnl_deinit(ms);
    while (ms->rids) {
        kctl__msrid *r = ms->rids;
        ms->rids = r->next;
        kctl__free(&ms->allocator, r);
    }
    if (KCTL__MS_SAVES) kctl__free(&ms->allocator, ms->path); /* (without files: never one) */
    kctl__cond_deinit(&ms->cv);
    kctl__mutex_deinit(&ms->mu);
    kctl__free(&ms->allocator, ms);
}

/* Record the event of the write about to take revision ms->rev + 1 (the
   ring drops its oldest); the caller then bumps ms->rev. */
/* The event of the write about to take revision ms->rev + 1, prepared
   before anything changes (its allocations can fail), then pushed (which
   cannot). */
typedef struct kctl__msevprep {
    char *rid;
    int type;
    kctl_obj *obj, *prev; /* references the event takes over */
} kctl__msevprep;

/* The store's copy of rid, made the first time an event names it, so an
   event allocates nothing of its own. NULL on NOMEM. Lock held. */
/* The store's copy of rid, or NULL. Lock held. */
static char *kctl__ms_rid_find(const kctl_memstore *ms, const char *rid) {
    kctl__msrid *r;
    for (r = ms->rids; r; r = r->next)
        if (kctl__strcmp((char *)(r + 1), rid) == 0) return (char *)(r + 1);
    return NULL;
}
static char *kctl__ms_rid_intern(kctl_memstore *ms, const char *rid) {
    size_t n = kctl__strlen(rid);
    kctl__msrid *r;
    char *have = kctl__ms_rid_find(ms, rid);
    if (have) return have;
    if (!(r = (kctl__msrid *)kctl__alloc(&ms->allocator, sizeof *r + n + 1))) return NULL;
    r->next = ms->rids;
    kctl__memcpy(r + 1, rid, n + 1);
    ms->rids = r;
    return (char *)(r + 1);
}

/* Room for one more event: while the ring is full and smaller than
   history, it doubles (from 8) up to history, events kept in order.
   NOMEM leaves it as it was. Lock held. */
static int kctl__ms_ring_reserve(kctl_memstore *ms) {
    uint32_t cap, k;
    kctl__msev *r;
    if (ms->count < ms->cap || ms->cap >= ms->history) return KCTL_OK;
    cap = ms->cap ? (ms->cap > ms->history / 2 ? ms->history : ms->cap * 2) : (ms->history < 8 ? ms->history : 8);
    if (!(r = (kctl__msev *)kctl__alloc(&ms->allocator, (size_t)cap * sizeof *r))) return KCTL_ERR_NOMEM;
    memset(r, 0, (size_t)cap * sizeof *r);
    if (ms->count) { /* the events from first to the end, then those from 0 */
        k = ms->cap - ms->first < ms->count ? ms->cap - ms->first : ms->count;
        kctl__memcpy(r, ms->ring + ms->first, (size_t)k * sizeof *r);
        kctl__memcpy(r + k, ms->ring, (size_t)(ms->count - k) * sizeof *r);
    }
    kctl__free(&ms->allocator, ms->ring);
    ms->ring = r;
    ms->cap = cap;
    ms->first = 0;
    return KCTL_OK;
}

static int kctl__ms_event_prepare(kctl_memstore *ms, kctl__msevprep *p, const char *rid, int type, kctl_obj *obj, kctl_obj *prev) {
    memset(p, 0, sizeof *p);
    if (kctl__ms_ring_reserve(ms) != KCTL_OK || !(p->rid = kctl__ms_rid_intern(ms, rid))) return KCTL_ERR_NOMEM;
    p->type = type;
    p->obj = kctl_obj_ref(obj);
    p->prev = kctl_obj_ref(prev);
    return KCTL_OK;
}

static void kctl__ms_event_drop(kctl_memstore *ms, kctl__msevprep *p) {
    (void)ms;
    kctl_obj_unref(p->obj);
    kctl_obj_unref(p->prev);
    memset(p, 0, sizeof *p);
}

/* Whether the store's memory is the default allocator's (which any
   thread may call at once): then a write may allocate and free outside
   the lock; a caller's allocator is only ever called under it. */
static bool kctl__ms_malloc(const kctl_memstore *ms) {
    return !ms->allocator.alloc_fn && !ms->obj_opts.allocator.alloc_fn;
}

/* The watchers holding events taken before a compaction to rev lost
   some they had not handed out: they let them go. Lock held. */
static void kctl__ms_batches_compacted(kctl_memstore *ms, uint64_t rev) {
#if KCTL__MS_BATCH
    kctl__msw *w;
    for (w = ms->watches; w; w = w->anext)
        if (w->bfrom < rev) KCTL__MS_FLAG_SET(&w->bdrop, 1u);
#else
    (void)ms;
    (void)rev;
#endif
}

static void kctl__ms_event_push(kctl_memstore *ms, kctl__msevprep *p) {
    kctl__msev *e;
    if (ms->count == ms->cap) { /* forget the oldest (its objects freed once the lock is let go) */
        e = &ms->ring[ms->first];
        if (e->rev > ms->compacted) ms->compacted = e->rev;
        kctl__ms_batches_compacted(ms, e->rev);
        if (!KCTL_SMALL) kctl__ms_free_event(ms, &ms->dropped);
        if (!KCTL_SMALL && kctl__ms_malloc(ms)) {
            ms->dropped = *e;
            memset(e, 0, sizeof *e);
        } else {
            kctl__ms_free_event(ms, e); /* an allocator of the caller's (or a small build): under the lock (e zeroed) */
        }
        ms->first = (ms->first + 1) % ms->cap;
        ms->count--;
    }
    e = &ms->ring[(ms->first + ms->count) % ms->cap]; /* a slot without an event: zero (left too) */
    e->rev = ms->rev + 1; /* the revision of the write this event records */
    e->type = p->type;
    e->obj = p->obj;
    e->prev = p->prev;
    e->rid = p->rid;
    memset(p, 0, sizeof *p);
    ms->count++;
    if (ms->waiters) ms->wake_due = true; /* kctl__ms_unlock wakes them */
    kctl__ms_wake(ms);
}

/* Let go of the lock after a write (kctl__ms_do): then wake the watches
   waiting for its event (they take the lock at once: not while the writer
   still holds it), and free what it pushed out of the history. */
static void kctl__ms_unlock(kctl_memstore *ms) {
    bool wake = ms->wake_due;
    kctl__msev dropped = ms->dropped; /* (small builds: none, freed under the lock) */
    ms->wake_due = false;
    if (!KCTL_SMALL) memset(&ms->dropped, 0, sizeof ms->dropped);
    kctl__mutex_unlock(&ms->mu);
    if (wake) kctl__cond_broadcast(&ms->cv);
    if (!KCTL_SMALL) kctl__ms_free_event(ms, &dropped);
}

/* A refusal the store itself makes (a fault, a failed save), worded as
   an API server's Status for its code. */
static int kctl__ms_refuse(kctl_api_status *st, int code, const char *what) {
    static const struct { signed char code; unsigned short http; const char *reason; } map[] = {
        { KCTL_ERR_INVALID_ARG, 400, "BadRequest" }, { KCTL_ERR_TOO_LARGE, 413, "RequestEntityTooLarge" },
        { KCTL_ERR_FULL, 507, "InsufficientStorage" }
#if !defined(KCTL_NO_FAULTS) || !defined(KCTL_NO_FILES)
        /* the codes only an injected fault (any code) or a failed save
           asks for: without both, the refusals are of the three above */
        , { KCTL_ERR_UNAUTHORIZED, 401, "Unauthorized" }, { KCTL_ERR_FORBIDDEN, 403, "Forbidden" },
        { KCTL_ERR_NOT_FOUND, 404, "NotFound" }, { KCTL_ERR_EXISTS, 409, "AlreadyExists" },
        { KCTL_ERR_CONFLICT, 409, "Conflict" }, { KCTL_ERR_GONE, 410, "Expired" },
        { KCTL_ERR_AGAIN, 429, "TooManyRequests" }, { KCTL_ERR_IO, 503, "ServiceUnavailable" },
        { KCTL_ERR_TIMEOUT, 504, "Timeout" }
#endif
    };
    size_t i;
    int http = 500;
    const char *reason = "InternalError";
#ifndef KCTL_NO_VALIDATION
    char msg[160];
#else
    const char *msg = NULL; /* refusals without words */
    (void)what;
#endif
    /* (the test after the table: one call a refusal, not a test inlined
       before each) */
    for (i = 0; i < sizeof map / sizeof map[0]; i++)
        if (map[i].code == code) { http = map[i].http; reason = map[i].reason; }
    if (st && code != KCTL_OK) {
#ifndef KCTL_NO_VALIDATION
        kctl__fmt(msg, sizeof msg, "%s: %s", what, kctl_strerror(code));
#endif
        kctl_api_status_set(st, http, reason, msg, NULL, NULL, NULL, NULL, 0);
    }
    return code;
}

/* apisrv's view of the store: the object at rid|ns/name. */
typedef struct kctl__mslook {
    kctl_memstore *ms;
    const char *rid;
    kctl__msent *hit; /* the entry the last lookup found (NULL: none) */
} kctl__mslook;

/* What the write that stored cur kept of it (cur: what the lookup gave). */
static const kctl__ascur *kctl__ms_cur_of(const kctl_obj *cur, void *user_data) {
    const kctl__mslook *l = (const kctl__mslook *)user_data;
    return l->hit && l->hit->obj == cur && l->hit->cur.obj == cur ? &l->hit->cur : NULL;
}

#if !KCTL_SMALL
/* Append name s to the key in buf[*used..cap), NUL left out: false when
   kctl__ms_name_ok refuses it (empty too) or it leaves no room for the NUL. */
static bool kctl__ms_put_name(char *buf, size_t *used, size_t cap, const char *s) {
    size_t n = *used, k;
    if (!s || !*s) return false;
    for (k = 0; s[k]; k++) {
        unsigned char c = (unsigned char)s[k];
        if (c <= ' ' || c == '/' || c == '|' || c == 0x7f || k >= 253 || n + 1 >= cap) return false;
        buf[n++] = (char)c;
    }
    *used = n;
    return true;
}
#endif

static const kctl_obj *kctl__ms_lookup(const char *ns, const char *name, void *user_data) {
    kctl__mslook *l = (kctl__mslook *)user_data;
    char key[1024];
    /* the key kctl__ms_key makes, its names checked: a name or namespace
       no object can have ("prod/a", say) names nothing, rather than
       another namespace's object */
#if KCTL_SMALL /* the names checked, then the key made */
    l->hit = kctl__ms_name_ok(name, false) && kctl__ms_name_ok(ns, true) && kctl__ms_key(l->rid, ns, name, key, sizeof key) == KCTL_OK
                 ? kctl__ms_find(l->ms, key) : NULL;
    return l->hit ? l->hit->obj : NULL;
#else
    size_t n = kctl__strlen(l->rid);
    kctl__msent *e;
    /* (checked as it is made) */
    if (n + 1 >= sizeof key) return NULL;
    kctl__memcpy(key, l->rid, n);
    key[n++] = '|';
    if (ns && *ns && (!kctl__ms_put_name(key, &n, sizeof key, ns) || n + 1 >= sizeof key)) return NULL;
    if (ns && *ns) key[n++] = '/';
    if (!kctl__ms_put_name(key, &n, sizeof key, name)) return NULL;
    key[n] = '\0';
    e = (kctl__msent *)kctl__map_find(&l->ms->objs, key, n, kctl__hash(key, n));
    l->hit = e;
    return e ? e->obj : NULL;
#endif
}


/* A revision's text into buf (KCTL_RV_MAX bytes): "%llu" without printf,
   once an event, under the lock. */
static void kctl__ms_rv(char *buf, uint64_t rev) {
    char digits[24], *p = kctl__dec(digits + sizeof digits, rev);
    size_t n = (size_t)(digits + sizeof digits - p);
    if (n >= KCTL_RV_MAX) n = KCTL_RV_MAX - 1; /* never: 20 digits at most */
    kctl__memcpy(buf, p, n);
    buf[n] = '\0';
}


/* One write, decided by the API-server rules, then made: everything it
   needs is allocated first, then (save_on_write) the store as it will be
   is saved, and only then is the write made and its event sent. A failed
   save leaves the store and its watchers as they were (IO). Lock held. */
static int kctl__ms_do(kctl_memstore *ms, kctl_apisrv_req *req, kctl_obj **out, kctl_api_status *st, kctl__aspre *pre) {
    char rid[256], key[1024], uid[48], now[32], rv[KCTL_RV_MAX]; /* rv: as kctl__ms_rv writes it */
    kctl__mslook look;
    kctl_apisrv_decision d;
    kctl__msevprep ev;
    kctl__mspending pend;
    kctl__msent *e = NULL, *fresh = NULL;
    kctl_obj *made = NULL, *gone = NULL;
    kctl__ascur cur;
    uint64_t fp = 0;
    bool fp_ok = false;
    kctl__jdoc od;
    kctl_jw w;
    int rc, od_rc = KCTL_OK, cur_rc = KCTL_ERR_INVALID_ARG;
    if (out) *out = NULL;
    memset(&od, 0, sizeof od);
    memset(&ev, 0, sizeof ev);
    if (KCTL__MS_SAVES) memset(&pend, 0, sizeof pend); /* (the journal's: without files none) */
    if (kctl__ms_rid(req->res, rid, sizeof rid) != KCTL_OK)
        return kctl__ms_refuse(st, KCTL_ERR_INVALID_ARG, "the resource's group, resource or namespace is not valid");
    look.ms = ms;
    look.rid = rid;
    look.hit = NULL;
#if KCTL_SMALL /* formatted every write, as "00000000-0000-4000-8000-%012llx" would (no formatter linked) */
    {
        uint64_t x = ms->uid_seq + 1, y;
        char *p = uid + 24;
        kctl__memcpy(uid, "00000000-0000-4000-8000-", 24);
        for (y = x >> 48; y; y >>= 4) p++; /* the digits past 12 */
        p += 12;
        *p = '\0';
        do { *--p = "0123456789abcdef"[x & 15]; x >>= 4; } while (p > uid + 24);
    }
    kctl__ms_rv(rv, ms->rev + 1);
#else
    { /* as "00000000-0000-4000-8000-%012llx" and "%llu" would write them, without printf (the uid once a create) */
        static const char hex[] = "0123456789abcdef";
        uint64_t x = ms->uid_seq + 1;
        size_t i = 0;
        char digits[24], *p, *u = ms->uid_text;
        if (ms->uid_text_seq != x) {
            kctl__memcpy(u, "00000000-0000-4000-8000-", 24);
            do { digits[i++] = hex[x & 15]; x >>= 4; } while (x || i < 12);
            for (x = 0; x < i; x++) u[24 + x] = digits[i - 1 - x];
            u[24 + i] = '\0';
            ms->uid_text_seq = ms->uid_seq + 1;
        }
        kctl__memcpy(uid, ms->uid_text, sizeof uid);
        p = kctl__dec(digits + sizeof digits, ms->rev + 1);
        kctl__memcpy(rv, p, (size_t)(digits + sizeof digits - p));
        rv[digits + sizeof digits - p] = '\0';
    }
#endif
    if (KCTL_SMALL) { /* formatted every write */
        kctl_apisrv_now(now);
    } else {
        uint64_t ns = kctl__port_wall_ns(), sec = kctl__udiv64(ns, 1000000000u, NULL);
        if (sec != ms->now_s || !ms->now_text[0]) { /* as kctl_apisrv_now */
            kctl__time_format((int64_t)kctl__udiv64(ns, 1000u, NULL), false, ms->now_text);
            ms->now_s = sec;
        }
        kctl__memcpy(now, ms->now_text, sizeof now);
    }
    req->lookup = kctl__ms_lookup;
    req->lookup_user_data = &look;
    req->uid = uid;
    req->now = now;
    req->rv = rv;
    if (KCTL__MS_GEN) { /* (without generateName: none read, 0 as kctl__ms_req zeroed it) */
        req->name_seed = ms->name_seed;
        ms->name_seed += 8; /* every request its own suffixes, refused or not */
    }
    req->allocator = ms->allocator;
    req->limits = ms->obj_opts.limits;
    kctl_jw_init_growable(&w, &ms->allocator);
    rc = kctl__as_decide(req, &w, &d, st, &od, &ms->obj_opts.limits, &od_rc, KCTL_SMALL ? NULL : kctl__ms_cur_of,
                         KCTL_SMALL ? NULL : &fp_ok, KCTL_SMALL ? NULL : &fp, pre);
    if (rc != KCTL_OK) goto out;
    if (d.outcome == KCTL_APISRV_UNCHANGED) { /* no revision, no event, nothing to save */
        if (out && d.cur) *out = kctl_obj_ref((kctl_obj *)(uintptr_t)d.cur);
        goto out;
    }
    /* what the next update's rules read of the document, from its tokens
       (before the build: it takes them for scratch) */
    memset(&cur, 0, sizeof cur);
    if (!KCTL_SMALL && d.outcome == KCTL_APISRV_WRITE && w.len && od_rc == KCTL_OK) /* failed: none kept (small builds: never) */
        cur_rc = kctl__as_cur_of(&cur, &od.j, &ms->allocator, fp_ok ? &fp : NULL);
    /* the object from the tokens the decision parsed the document into */
    if (w.len && (rc = od_rc != KCTL_OK ? od_rc : kctl__obj_build(w.buf, w.len, &ms->obj_opts, od.toks, &od.j, &made)) != KCTL_OK) {
        if (rc == KCTL_ERR_PROTO) rc = kctl__ms_refuse(st, KCTL_ERR_INVALID_ARG, "the object cannot be kept");
        else if (rc == KCTL_ERR_TOO_LARGE) rc = kctl__ms_refuse(st, rc, "Request entity too large: the object as stored is beyond the store's limits");
        goto out;
    }
    /* the entry written: the one the decision read, found once, or by
       the key of what is removed or made */
    if (d.cur && look.hit && look.hit->obj == d.cur) {
        e = look.hit;
    } else {
        const kctl_obj *o = d.outcome == KCTL_APISRV_REMOVE ? d.cur : made;
        if ((rc = kctl__ms_key(rid, kctl_obj_namespace(o), kctl_obj_name(o), key, sizeof key)) != KCTL_OK) goto out;
        e = kctl__ms_find(ms, key);
    }
    if (KCTL__MS_SAVES) pend.e = e;
    if (d.outcome == KCTL_APISRV_REMOVE) { /* watchers get the last stored state at the deletion's revision */
        if ((rc = kctl_apisrv_with_rv(d.cur, rv, &ms->obj_opts, &gone)) != KCTL_OK) goto out;
    } else {
        if (req->verb != KCTL_VERB_REMOVE && (rc = kctl__ms_budget(ms, e ? e->obj : NULL, made, st)) != KCTL_OK) goto out;
        if (!e && !(fresh = kctl__ms_entry(ms, key, kctl__strlen(rid), NULL))) {
            rc = KCTL_ERR_NOMEM;
            goto out;
        }
        if (KCTL__MS_SAVES) { /* (the journal's: without files none) */
            pend.obj = made;
            pend.rid = rid;
        }
    }
    if ((rc = kctl__ms_event_prepare(ms, &ev, rid, gone ? KCTL_EVENT_DELETED : e ? KCTL_EVENT_MODIFIED : KCTL_EVENT_ADDED,
                                     gone ? gone : made, e ? e->obj : NULL)) != KCTL_OK)
        goto out;
    if (KCTL__MS_SAVES) pend.seq = ms->uid_seq + (req->verb == KCTL_VERB_CREATE && !d.cur ? 1u : 0u);
    if (ms->save_on_write && (rc = kctl__jnl_append(ms, ms->rev + 1, &pend)) != KCTL_OK) {
        rc = kctl__ms_refuse(st, rc, "the write could not be saved, so it was not made");
        goto out;
    }
    /* nothing fails from here on */
    if (d.outcome == KCTL_APISRV_REMOVE) {
        kctl__ms_drop(ms, e);
    } else if (fresh) {
        fresh->obj = kctl_obj_ref(made);
        if (!KCTL_SMALL) fresh->cur = cur; /* (small builds keep none: zero, from kctl__ms_entry) */
        if (cur_rc == KCTL_OK) fresh->cur.obj = made;
        kctl__map_insert(&ms->objs, &fresh->node);
        if (KCTL__MS_BOUND) ms->nbytes += kctl__ms_doc_len(made);
        fresh = NULL;
    } else {
        if (KCTL__MS_BOUND) ms->nbytes += kctl__ms_doc_len(made) - kctl__ms_doc_len(e->obj); /* modulo: exact */
        kctl_obj_unref(e->obj);
        e->obj = kctl_obj_ref(made);
        if (!KCTL_SMALL) e->cur = cur; /* (small builds keep none: zero, from kctl__ms_entry) */
        if (cur_rc == KCTL_OK) e->cur.obj = made;
    }
    kctl__ms_event_push(ms, &ev);
    ms->rev++;
    if (req->verb == KCTL_VERB_CREATE && !d.cur) ms->uid_seq++;
    if (out && made) *out = kctl_obj_ref(made); /* a delete that removed: NULL */
    if (KCTL__MS_SAVES && ms->save_on_write && ms->wake_due) { /* the watches see the write now, not once it is durable */
        ms->wake_due = false;
        kctl__cond_broadcast(&ms->cv);
    }
    if (KCTL__MS_SAVES && ms->save_on_write && (rc = kctl__jnl_durable(ms, ms->jnl.seq)) != KCTL_OK) { /* acknowledged once durable */
        rc = kctl__ms_refuse(st, rc, "the write was made but could not be synced to disk; it may or may not last");
        if (out) {
            kctl_obj_unref(*out);
            *out = NULL;
        }
    }
out:
    kctl__ms_event_drop(ms, &ev);
    kctl__free(&ms->allocator, fresh);
    kctl_obj_unref(made);
    kctl_obj_unref(gone);
    kctl__jdoc_free(&od);
    kctl_jw_free(&w);
    return rc;
}

/* A fault armed for verb, as the request's answer. Lock held. */
static int kctl__ms_faulted(kctl_memstore *ms, kctl_verb verb, kctl_api_status *st) {
#ifndef KCTL_NO_FAULTS
    int rc = kctl__ms_fault(ms, verb);
    return rc == KCTL_OK ? rc : kctl__ms_refuse(st, rc, "injected fault");
#else
    (void)ms; (void)verb; (void)st;
    return KCTL_OK; /* no faults: every request is answered */
#endif
}

/* How the owner asks (kctl__ms_req's how: the verb, or this bit with it):
   no fault injected; with CREATE, the owner's apply. */
#define KCTL__MS_OWNER 0x100u

/* One write, the request made here for every entry point: verb how
   (KCTL__MS_OWNER: the owner's, else the transport's), with name (PATCH,
   REMOVE), the document or patch json[0..len) (KCTL_NTS), the patch's
   flags and the delete's preconditions del. Under the store's lock: the
   fault armed for its verb first (the transport's), then kctl__ms_do; a
   document sent (create, update, update_status) is read before, without
   the lock (kctl__as_pre), when the store's memory is the default
   allocator's. */
static int kctl__ms_req(kctl_memstore *ms, const kctl_resource *res, const char *json, size_t len, kctl_obj **out, kctl_api_status *st,
                        unsigned how, const char *name, unsigned flags, const kctl_delete_opts *del) {
    kctl_apisrv_req req;
    kctl__aspre pre;
    int rc = KCTL_OK;
    kctl_verb verb = (kctl_verb)(how & 0xffu);
    bool sent = verb < KCTL_VERB_PATCH;
    if (out) *out = NULL;
    if (!ms || !res || (verb != KCTL_VERB_REMOVE && !json) || (!sent && !name)) return KCTL_ERR_INVALID_ARG;
    memset(&req, 0, sizeof req);
    req.verb = verb;
    req.apply = how == (KCTL__MS_OWNER | KCTL_VERB_CREATE);
    req.res = res;
    req.name = name;
    req.json = json;
    req.len = json && len == KCTL_NTS ? kctl__strlen(json) : len;
    req.patch_flags = flags;
    req.del = del;
    if (!KCTL_SMALL && sent && kctl__ms_malloc(ms)) kctl__as_pre(&pre, req.json, req.len, &ms->allocator, &ms->obj_opts.limits,
                                                               verb != KCTL_VERB_UPDATE_STATUS);
    else memset(&pre, 0, sizeof pre);
    kctl__mutex_lock(&ms->mu);
    if (!(how & KCTL__MS_OWNER)) rc = kctl__ms_faulted(ms, verb, st);
    if (rc == KCTL_OK) rc = kctl__ms_do(ms, &req, out, st, KCTL_SMALL || !sent ? NULL : &pre);
    kctl__ms_unlock(ms);
    if (!KCTL_SMALL) kctl__as_pre_free(&pre);
    return rc;
}

static int kctl__ms_vt_create(void *self, const kctl_resource *res, const char *json, size_t len, kctl_obj **out, kctl_api_status *st) {
    return kctl__ms_req((kctl_memstore *)self, res, json, len, out, st, KCTL_VERB_CREATE, NULL, 0, NULL);
}

static int kctl__ms_vt_update(void *self, const kctl_resource *res, const char *json, size_t len, kctl_obj **out, kctl_api_status *st) {
    return kctl__ms_req((kctl_memstore *)self, res, json, len, out, st, KCTL_VERB_UPDATE, NULL, 0, NULL);
}

static int kctl__ms_vt_update_status(void *self, const kctl_resource *res, const char *json, size_t len, kctl_obj **out,
                                     kctl_api_status *st) {
    return kctl__ms_req((kctl_memstore *)self, res, json, len, out, st, KCTL_VERB_UPDATE_STATUS, NULL, 0, NULL);
}

static int kctl__ms_vt_patch(void *self, const kctl_resource *res, const char *name, const char *patch, size_t len, unsigned flags,
                             kctl_obj **out, kctl_api_status *st) {
    return kctl__ms_req((kctl_memstore *)self, res, patch, len, out, st, KCTL_VERB_PATCH, name, flags, NULL);
}

static int kctl__ms_vt_remove(void *self, const kctl_resource *res, const char *name, const kctl_delete_opts *opts, kctl_obj **out,
                              kctl_api_status *st) {
    return kctl__ms_req((kctl_memstore *)self, res, NULL, 0, out, st, KCTL_VERB_REMOVE, name, 0, opts);
}

static int kctl__ms_get(kctl_memstore *ms, bool faults, const kctl_resource *res, const char *name, kctl_obj **out,
                        kctl_api_status *st) {
    char rid[256];
    kctl__mslook look;
    const kctl_obj *o;
    int rc = KCTL_OK;
    if (!out) return KCTL_ERR_INVALID_ARG;
    *out = NULL;
    if (!ms || !name || !*name || kctl__ms_rid(res, rid, sizeof rid) != KCTL_OK)
        return kctl__ms_refuse(st, KCTL_ERR_INVALID_ARG, "the resource or name is not valid");
    if (!kctl__ms_name_ok(name, false)) /* (then the key fits: a name and a namespace are at most 253 bytes) */
        return kctl_apisrv_refuse(KCTL_ERR_NOT_FOUND, res, name, st); /* no object can have that name */
    kctl__mutex_lock(&ms->mu);
    if (faults) rc = kctl__ms_faulted(ms, KCTL_VERB_GET, st);
    if (rc == KCTL_OK) { /* the object at the key the rules' lookups make */
        look.ms = ms;
        look.rid = rid;
        if ((o = kctl__ms_lookup(res->ns, name, &look)) != NULL) *out = kctl_obj_ref((kctl_obj *)(uintptr_t)o);
        else rc = kctl_apisrv_refuse(KCTL_ERR_NOT_FOUND, res, name, st);
    }
    kctl__mutex_unlock(&ms->mu);
    return rc;
}

static int kctl__ms_vt_get(void *self, const kctl_resource *res, const char *name, kctl_obj **out, kctl_api_status *st) {
    return kctl__ms_get((kctl_memstore *)self, true, res, name, out, st);
}

static void kctl__ms_vt_watch_close(void *self, kctl_watch *watch) {
    kctl__msw *w = (kctl__msw *)watch;
    kctl_memstore *ms = (kctl_memstore *)self;
    if (!w) return;
#if KCTL__MS_BATCH
    {
        kctl__msw **p;
        kctl__mutex_lock(&ms->mu);
        for (p = &ms->watches; *p && *p != w; p = &(*p)->anext) { }
        if (*p) *p = w->anext; /* (a watch that failed to open may not be there) */
        if (w->wake.fn) {
            for (p = &ms->woken; *p != w; p = &(*p)->wnext) { }
            *p = w->wnext;
        }
        kctl__mutex_unlock(&ms->mu);
    }
#else
    if (w->wake.fn) {
        kctl__msw **p;
        kctl__mutex_lock(&ms->mu);
        for (p = &ms->woken; *p != w; p = &(*p)->wnext) { }
        *p = w->wnext;
        kctl__mutex_unlock(&ms->mu);
    }
#endif
    KCTL__MS_SEL_FREE(w->sel);
    kctl_obj_list_free(&w->initial);
#if KCTL__MS_BATCH
    while (w->bnext < w->bcount) kctl_obj_unref(w->batch[w->bnext++].obj);
#endif
    kctl__free(&ms->allocator, w);
}

/* Whether an object is in namespace ns ("" or NULL: any). */
static bool kctl__ms_in(const kctl_obj *o, const char *ns) {
    return !ns || !*ns || kctl__strcmp(kctl_obj_namespace(o), ns) == 0;
}

/* Whether a list or watch in ns with sel selects o (without selectors:
   sel is NULL, everything). */
static bool kctl__ms_selects(const kctl_obj *o, const char *ns, const kctl_selector *sel) {
#ifdef KCTL_NO_SELECTORS
    (void)sel;
    return kctl__ms_in(o, ns);
#else
    return kctl__ms_in(o, ns) && kctl_selector_matches(sel, o);
#endif
}

static int kctl__ms_cmp_key(const void *a, const void *b) {
    return kctl__strcmp(kctl_obj_key(*(kctl_obj *const *)a), kctl_obj_key(*(kctl_obj *const *)b));
}

#if !KCTL_SMALL
/* Records r[0..n) in order of k, stable: a radix sort, one pass per byte
   position at which the keys differ, through t[0..n) and cnt[0..256)
   (scratch, with the records: not on the stack). Returns where they
   ended, r or t. */
typedef struct kctl__msrec {
    uint64_t k;
    void *p;
} kctl__msrec;
static kctl__msrec *kctl__ms_radix(kctl__msrec *r, kctl__msrec *t, size_t *cnt, size_t n) {
    size_t i, j;
    unsigned shift;
    for (shift = 0; shift < 64; shift += 8) { /* the lowest byte first: each pass keeps the order of the one before */
        size_t sum = 0;
        kctl__msrec *x;
        memset(cnt, 0, 256 * sizeof *cnt);
        for (i = 0; i < n; i++) cnt[r[i].k >> shift & 255u]++;
        if (cnt[r[0].k >> shift & 255u] == n) continue; /* the same byte in every key */
        for (j = 0; j < 256; j++) {
            size_t c = cnt[j];
            cnt[j] = sum;
            sum += c;
        }
        for (i = 0; i < n; i++) t[cnt[r[i].k >> shift & 255u]++] = r[i];
        x = r;
        r = t;
        t = x;
    }
    return r;
}

/* v[0..n) (n > 1) in key order, without a comparison per pair: the heap
   sort's 2 n log2 n strcmp calls, each on two keys in objects far apart,
   were a third of a 100,000-object list and sync. Each object gets the
   8 bytes of its key after the prefix all the keys share, as a big-endian
   number (0 past the key's end, which sorts a shorter key first, as
   strcmp does), and a radix sort orders those; keys alike in all 8 are
   then ordered by strcmp among themselves. false when there is no memory
   for it (nothing moved). */
static bool kctl__ms_sort_keys(const kctl_allocator *a, kctl_obj **v, size_t n) {
    kctl__msrec *blk, *r;
    size_t cp = v[0]->node.len, i, j;
    if (n > (SIZE_MAX - 256 * sizeof(size_t)) / (2 * sizeof *r)) return false;
    if (!(blk = (kctl__msrec *)kctl__alloc(a, 2 * n * sizeof *r + 256 * sizeof(size_t)))) return false;
    for (i = 1; i < n && cp; i++) { /* the prefix every key shares */
        const char *k = v[i]->node.key, *k0 = v[0]->node.key;
        size_t m = 0;
        while (m < cp && k[m] == k0[m]) m++;
        cp = m;
    }
    for (i = 0; i < n; i++) {
        const unsigned char *p = (const unsigned char *)v[i]->node.key + cp;
        size_t left = v[i]->node.len - cp;
        uint64_t k = 0;
        for (j = 0; j < 8; j++) k = k << 8 | (j < left ? p[j] : 0u);
        blk[i].k = k;
        blk[i].p = v[i];
    }
    r = kctl__ms_radix(blk, blk + n, (size_t *)(void *)(blk + 2 * n), n);
    for (i = 0; i < n; i = j) {
        for (j = i; j < n && r[j].k == r[i].k; j++) v[j] = (kctl_obj *)r[j].p;
        if (j - i > 1) kctl__sort(v + i, j - i, sizeof *v, kctl__ms_cmp_key); /* alike in those 8 bytes */
    }
    kctl__free(a, blk);
    return true;
}
#endif

/* Every object of rid in ns matching sel, with a key after `after` (NULL:
   any), sorted by key: references. Lock held. */
static int kctl__ms_collect(kctl_memstore *ms, const char *rid, const char *ns, const kctl_selector *sel, const char *after,
                            kctl_obj_list *out) {
    size_t i, n = 0, rl = kctl__strlen(rid);
    int pass;
    memset(out, 0, sizeof *out);
    out->allocator = ms->allocator;
    for (pass = 0; pass < 2; pass++) { /* count, then take */
        for (i = 0; i < ms->objs.cap; i++) {
            kctl__msent *e = (kctl__msent *)ms->objs.slots[i].node;
            if (!e || e->rid_len != rl || kctl__memcmp(e->node.key, rid, rl) != 0 || !kctl__ms_selects(e->obj, ns, sel) ||
                (after && kctl__strcmp(kctl_obj_key(e->obj), after) <= 0))
                continue;
            if (pass) out->items[out->count++] = kctl_obj_ref(e->obj);
            else n++;
        }
        if (!n) return KCTL_OK;
        if (!pass && !(out->items = (kctl_obj **)kctl__alloc(&ms->allocator, n * sizeof *out->items))) return KCTL_ERR_NOMEM;
    }
#if !KCTL_SMALL
    if (n > 1 && kctl__ms_sort_keys(&ms->allocator, out->items, n)) return KCTL_OK;
#endif
    if (n > 1) kctl__sort(out->items, n, sizeof *out->items, kctl__ms_cmp_key); /* (small builds: always) */
    return KCTL_OK;
}

/* A list's or watch's resource (rid, 256 bytes) and selector, or the
   refusal. */
static int kctl__ms_read_req(kctl_memstore *ms, const kctl_resource *res, const kctl_list_opts *opts, char *rid, kctl_selector **sel,
                        kctl_api_status *st) {
    int rc;
    *sel = NULL;
    if (kctl__ms_rid(res, rid, 256) != KCTL_OK) /* its namespace is a name: at most 253 bytes */
        return kctl__ms_refuse(st, KCTL_ERR_INVALID_ARG, "the resource's group, resource or namespace is not valid");
#ifdef KCTL_NO_SELECTORS /* only the selectors that select everything, as the parse takes them; none made (*sel NULL) */
    (void)rc;
    (void)ms;
    return opts && (!kctl__sel_empty(opts->label_selector, false) || !kctl__sel_empty(opts->field_selector, true)) ? KCTL_ERR_UNSUPPORTED
                                                                                                                  : KCTL_OK;
#else
    if (opts && (rc = kctl_selector_parse(opts->label_selector, opts->field_selector, &ms->allocator, sel)) != KCTL_OK)
        return rc == KCTL_ERR_INVALID_ARG ? kctl__ms_refuse(st, rc, "the label or field selector is not valid") : rc;
    return KCTL_OK;
#endif
}

/* GONE for a version older than the history (compacted); without words
   under KCTL_NO_VALIDATION, as the store's other refusals. */
static int kctl__ms_gone(kctl_api_status *st, uint64_t from, uint64_t compacted) {
#ifndef KCTL_NO_VALIDATION
    char msg[96];
    kctl__fmt(msg, sizeof msg, "too old resource version: %llu (%llu)", (unsigned long long)from, (unsigned long long)compacted);
#else
    const char *msg = NULL;
    (void)from;
    (void)compacted;
#endif
    if (st) kctl_api_status_set(st, 410, "Expired", msg, NULL, NULL, NULL, NULL, 0);
    return KCTL_ERR_GONE;
}

#ifndef KCTL_NO_PAGING
/* Hand out v[from..from+limit) (all when limit is 0) with a continue
   token when more follow. Lock held. */
static int kctl__ms_page(kctl_memstore *ms, kctl_obj **v, size_t n, size_t from, uint32_t limit, uint64_t rev,
                         kctl_list_result *out) {
    size_t i, take = n - from;
    if (limit && take > limit) take = limit;
    if (take && !(out->items.items = (kctl_obj **)kctl__alloc(&ms->allocator, take * sizeof(kctl_obj *)))) return KCTL_ERR_NOMEM;
    for (i = 0; i < take; i++) out->items.items[out->items.count++] = kctl_obj_ref(v[from + i]);
    if (from + take < n)
        kctl__fmt(out->continue_token, sizeof out->continue_token, "%llu:%s", (unsigned long long)rev, kctl_obj_key(v[from + take - 1]));
    kctl__fmt(out->resource_version, sizeof out->resource_version, "%llu", (unsigned long long)rev);
    return KCTL_OK;
}

static int kctl__ms_vt_list(void *self, const kctl_resource *res, const kctl_list_opts *opts, kctl_list_result *out, kctl_api_status *st) {
    kctl_memstore *ms = (kctl_memstore *)self;
    kctl_selector *sel = NULL;
    kctl_obj_list all;
    char rid[256], id[512];
    const char *after = opts && opts->continue_token && *opts->continue_token ? opts->continue_token : NULL;
    uint64_t tok_rev = 0; /* a token is "<version of its list>:<last key>" */
    uint32_t limit = opts ? opts->limit : 0;
    size_t k;
    int rc, idn;
    if (!out) return KCTL_ERR_INVALID_ARG;
    memset(out, 0, sizeof *out);
    memset(&all, 0, sizeof all);
    out->items.allocator = ms->allocator;
    if ((rc = kctl__ms_read_req(ms, res, opts, rid, &sel, st)) != KCTL_OK) return rc;
    idn = kctl__fmt(id, sizeof id, "%s|%s|%s|%s", rid, res->ns ? res->ns : "", opts && opts->label_selector ? opts->label_selector : "",
                   opts && opts->field_selector ? opts->field_selector : "");
    if (idn < 0 || (size_t)idn >= sizeof id) id[0] = 0; /* too long to remember: every page scans */
    if (after) {
        const char *p = after;
        while (*p >= '0' && *p <= '9' && tok_rev < UINT64_MAX / 10) tok_rev = tok_rev * 10 + (uint64_t)(*p++ - '0');
        if (*p == ':' && p > after) after = p + 1;
        else tok_rev = 0; /* not one of ours: a key alone */
    }
    kctl__mutex_lock(&ms->mu);
    rc = kctl__ms_faulted(ms, KCTL_VERB_LIST, st);
    if (rc == KCTL_OK && after && tok_rev) { /* the next page of a list in progress: find the token's key */
        kctl__mspaged *pg = NULL;
        for (k = 0; k < KCTL__MS_PAGED && id[0]; k++)
            if (ms->paged[k].id[0] && ms->paged[k].rev == tok_rev && kctl__strcmp(ms->paged[k].id, id) == 0) pg = &ms->paged[k];
        if (pg) {
            size_t lo = 0, hi = pg->n;
            while (lo < hi) {
                size_t mid = lo + (hi - lo) / 2;
                if (kctl__strcmp(kctl_obj_key(pg->v[mid]), after) <= 0) lo = mid + 1;
                else hi = mid;
            }
            pg->used = ++ms->paged_tick;
            rc = kctl__ms_page(ms, pg->v, pg->n, lo, limit, pg->rev, out);
            if (rc == KCTL_OK && !out->continue_token[0]) kctl__ms_pg_drop(ms, pg); /* the last page */
            goto done;
        }
        if (tok_rev != ms->rev) { /* its snapshot is forgotten and the store moved on: list again */
            rc = KCTL_ERR_GONE;
            if (st) kctl_api_status_set(st, 410, "Expired", "The provided continue parameter is too old to display a consistent list "
                                        "result. You can start a new list without the continue parameter.", NULL, NULL, NULL, NULL, 0);
            goto done;
        }
    }
    /* a first page (or the next of a list whose version is still the
       store's): the objects after the token's key, sorted */
    if (rc == KCTL_OK) rc = kctl__ms_collect(ms, rid, res->ns, sel, after, &all);
    if (rc == KCTL_OK) rc = kctl__ms_page(ms, all.items, all.count, 0, limit, ms->rev, out);
    if (rc == KCTL_OK && out->continue_token[0] && id[0]) { /* more pages to come: remember the rest */
        kctl__mspaged *pg = &ms->paged[0];
        for (k = 1; k < KCTL__MS_PAGED; k++) /* a free slot, else the least recently used */
            if (pg->id[0] && (!ms->paged[k].id[0] || ms->paged[k].used < pg->used)) pg = &ms->paged[k];
        kctl__ms_pg_drop(ms, pg);
        for (k = 0; k < out->items.count; k++) kctl_obj_unref(all.items[k]); /* the page has its own */
        kctl__memmove(all.items, all.items + out->items.count, (all.count - out->items.count) * sizeof *all.items);
        pg->v = all.items;
        pg->n = all.count - out->items.count;
        pg->rev = ms->rev;
        pg->used = ++ms->paged_tick;
        kctl__fmt(pg->id, sizeof pg->id, "%s", id);
        all.items = NULL;
        all.count = 0;
    }
done:
    kctl__mutex_unlock(&ms->mu);
    kctl_obj_list_free(&all);
    KCTL__MS_SEL_FREE(sel);
    return rc;
}
#else /* KCTL_NO_PAGING: every list is one page */
static int kctl__ms_vt_list(void *self, const kctl_resource *res, const kctl_list_opts *opts, kctl_list_result *out, kctl_api_status *st) {
    kctl_memstore *ms = (kctl_memstore *)self;
    kctl_selector *sel;
    char rid[256];
    int rc;
    if (!out) return KCTL_ERR_INVALID_ARG;
    memset(out, 0, sizeof *out);
    out->items.allocator = ms->allocator;
    if (opts && (opts->limit || (opts->continue_token && *opts->continue_token))) return KCTL_ERR_UNSUPPORTED;
    if ((rc = kctl__ms_read_req(ms, res, opts, rid, &sel, st)) != KCTL_OK) return rc;
    kctl__mutex_lock(&ms->mu);
    rc = kctl__ms_faulted(ms, KCTL_VERB_LIST, st);
    if (rc == KCTL_OK) rc = kctl__ms_collect(ms, rid, res->ns, sel, NULL, &out->items);
    kctl__ms_rv(out->resource_version, ms->rev);
    kctl__mutex_unlock(&ms->mu);
    KCTL__MS_SEL_FREE(sel);
    return rc;
}
#endif

static int kctl__ms_vt_watch_open(void *self, const kctl_resource *res, const kctl_list_opts *opts, const char *from_rv, kctl_watch **out,
                                  kctl_api_status *st) {
    kctl_memstore *ms = (kctl_memstore *)self;
    kctl__msw *w;
    uint64_t from = 0;
    const char *p;
    int rc;
    if (!out) return KCTL_ERR_INVALID_ARG;
    *out = NULL;
    if (!(w = (kctl__msw *)kctl__alloc(&ms->allocator, sizeof *w))) return KCTL_ERR_NOMEM;
    memset(w, 0, sizeof *w);
    w->ms = ms;
    if ((rc = kctl__ms_read_req(ms, res, opts, w->rid, &w->sel, st)) != KCTL_OK) goto fail;
    for (p = from_rv ? from_rv : ""; *p; p++) {
        if (!kctl__jdigit(*p) || from > (UINT64_MAX - 9) / 10) {
            rc = kctl__ms_refuse(st, KCTL_ERR_INVALID_ARG, "invalid resource version");
            goto fail;
        }
        from = from * 10 + (uint64_t)(*p - '0');
    }
    if (res->ns) kctl__memcpy(w->ns, res->ns, kctl__strlen(res->ns)); /* a name (kctl__ms_rid): at most 253 bytes; w was zeroed */
    kctl__mutex_lock(&ms->mu);
#if !KCTL_SMALL
    w->irid = kctl__ms_rid_find(ms, w->rid);
#endif
#if KCTL__MS_BATCH
    w->bfrom = UINT64_MAX; /* nothing held */
    w->anext = ms->watches;
    ms->watches = w;
#endif
    rc = kctl__ms_faulted(ms, KCTL_VERB_WATCH, st);
#ifndef KCTL_NO_FAULTS
    w->break_after = ms->break_after;
#endif
    w->last_emit_ns = kctl_clock_now(&ms->clock);
    if (rc == KCTL_OK && from_rv && *from_rv) {
        if (from < ms->compacted) { /* older than the history */
            rc = kctl__ms_gone(st, from, ms->compacted);
        } else if (from > ms->rev) { /* "too large resource version": the cause says it (a reflector reads it) */
            kctl_status_cause c;
#ifndef KCTL_NO_VALIDATION
            char msg[112];
            kctl__fmt(msg, sizeof msg, "Timeout: Too large resource version: %llu, current: %llu", (unsigned long long)from,
                     (unsigned long long)ms->rev);
#else
            const char *msg = NULL;
#endif
            c.reason = "ResourceVersionTooLarge";
            c.message = "Too large resource version";
            c.field = "";
            rc = KCTL_ERR_TIMEOUT;
            if (st && kctl_api_status_set(st, 504, "Timeout", msg, NULL, NULL, NULL, &c, 1) == KCTL_OK) st->retry_after_s = 1;
        } else {
            w->pos = from;
        }
    } else if (rc == KCTL_OK) { /* from now, with the objects there now */
        rc = kctl__ms_collect(ms, w->rid, w->ns, w->sel, NULL, &w->initial);
        w->pos = ms->rev;
    }
    kctl__mutex_unlock(&ms->mu);
    if (rc == KCTL_OK) {
        *out = (kctl_watch *)w;
        return KCTL_OK;
    }
fail:
    kctl__ms_vt_watch_close(self, (kctl_watch *)w);
    return rc;
}

/* watch_notify: w's wake-up is called (under mu) for every event the
   store records and every compaction, from then until w is closed. */
static int kctl__ms_vt_watch_notify(void *self, kctl_watch *watch, const kctl_wake *wake) {
    kctl__msw *w = (kctl__msw *)watch;
    kctl_memstore *ms = (kctl_memstore *)self;
    if (!w || !wake || !wake->fn) return KCTL_ERR_INVALID_ARG;
    kctl__mutex_lock(&ms->mu);
    if (!w->wake.fn) { /* into the list */
        w->wnext = ms->woken;
        ms->woken = w;
    }
    w->wake = *wake;
    kctl__mutex_unlock(&ms->mu);
    return KCTL_OK;
}

#ifdef KCTL_NO_SELECTORS
#define KCTL__MS_SELECTORS 0
#else
#define KCTL__MS_SELECTORS 1
#endif

/* What event e is to watcher w: its type (0: nothing for w), the object
   to send in *give; or NOMEM when the state an object left w's selection
   in could not be made (the watcher stays before e). Lock held. */
static KCTL__SMALL_INLINE32 int kctl__ms_ev_for(kctl_memstore *ms, const kctl__msw *w, kctl__msev *e, kctl_obj **give) {
    *give = e->obj;
#if KCTL_SMALL
    if (kctl__strcmp(e->rid, w->rid) != 0) return 0;
#else
    if (w->irid ? e->rid != w->irid : kctl__strcmp(e->rid, w->rid) != 0) return 0; /* (one copy of a rid per store) */
#endif
#ifdef KCTL_NO_SELECTORS
    /* no selector: an object is in the watch's namespace or not for good
       (its namespace is in its key), so every event is seen as it is, or
       not at all */
    (void)ms;
    return kctl__ms_in(e->obj, w->ns) ? e->type : 0;
#else
    {
        bool now_in = kctl__ms_in(e->obj, w->ns) && kctl_selector_matches(w->sel, e->obj);
        bool was_in = e->prev && kctl__ms_in(e->prev, w->ns) && kctl_selector_matches(w->sel, e->prev);
        if (e->type == KCTL_EVENT_DELETED) /* seen by those who saw it before */
            return (e->prev ? was_in : now_in) ? KCTL_EVENT_DELETED : 0;
        if (e->type == KCTL_EVENT_ADDED) return now_in ? KCTL_EVENT_ADDED : 0;
        if (now_in) return was_in ? KCTL_EVENT_MODIFIED : KCTL_EVENT_ADDED; /* entered the selection */
        if (was_in) {
            /* left it: the last state it matched in, at this event's
               revision, as an API server sends it */
            char rv[KCTL_RV_MAX];
            int rc;
            kctl__ms_rv(rv, e->rev);
            if (!e->left && (rc = kctl_apisrv_with_rv(e->prev, rv, &ms->obj_opts, &e->left)) != KCTL_OK) return rc;
            *give = e->left;
            return KCTL_EVENT_DELETED;
        }
        return 0;
    }
#endif
}

static int kctl__ms_vt_watch_next(void *self, kctl_watch *watch, uint64_t timeout_ns, kctl_event *ev, kctl_api_status *st) {
    kctl__msw *w = (kctl__msw *)watch;
    kctl_memstore *ms = (kctl_memstore *)self;
    bool waited = false;
    uint64_t at;
    int type;
    if (!w || !ev) return KCTL_ERR_INVALID_ARG;
    memset(ev, 0, sizeof *ev);
#ifndef KCTL_NO_FAULTS
    if (w->broken) return KCTL_ERR_IO;
#endif
    if (w->initial_next < w->initial.count) { /* the objects there at open */
        ev->type = KCTL_EVENT_ADDED;
        ev->obj = kctl_obj_ref(w->initial.items[w->initial_next++]);
        if (w->initial_next == w->initial.count) kctl__ms_rv(ev->resource_version, w->pos); /* the last: the watch's version */
        else kctl__scopy(ev->resource_version, sizeof ev->resource_version, kctl_obj_resource_version(ev->obj));
        return KCTL_OK;
    }
#if KCTL__MS_BATCH
    if (w->bnext < w->bcount) { /* taken with an earlier one: no lock */
        if (!KCTL__MS_FLAG_GET(&w->bdrop)) {
            ev->type = w->batch[w->bnext].type;
            ev->obj = w->batch[w->bnext].obj;
            w->bpos = w->batch[w->bnext++].rev;
            kctl__ms_rv(ev->resource_version, w->bpos);
            return KCTL_OK;
        }
        while (w->bnext < w->bcount) kctl_obj_unref(w->batch[w->bnext++].obj); /* compacted since: read again */
        w->pos = w->bpos;
    }
#endif
    kctl__mutex_lock(&ms->mu);
#if KCTL__MS_BATCH
    w->bnext = w->bcount = 0;
    w->bfrom = UINT64_MAX;
    KCTL__MS_FLAG_SET(&w->bdrop, 0u);
#endif
    for (;;) {
        uint32_t k;
        if (w->pos < ms->compacted) {
            uint64_t pos = w->pos, compacted = ms->compacted;
            kctl__mutex_unlock(&ms->mu);
            return kctl__ms_gone(st, pos, compacted);
        }
#if KCTL_SMALL
        k = 0; /* from the oldest: the loop below skips what pos is past */
#else
        { /* revisions rise along the ring: start at the first one past pos */
            uint32_t hi = ms->count;
            k = 0;
            if (hi && w->pos >= ms->ring[ms->first].rev) {
                /* one event a revision, so that one lies pos + 1 - (the
                   oldest's) on; found there, no search (a watcher that
                   keeps up searched the whole ring at every event) */
                uint64_t d = w->pos + 1 - ms->ring[ms->first].rev;
                k = d < hi ? (uint32_t)d : hi;
                if ((k == hi || ms->ring[(ms->first + k) % ms->cap].rev > w->pos) &&
                    ms->ring[(ms->first + k - 1) % ms->cap].rev <= w->pos)
                    hi = k; /* (otherwise searched, as it was) */
                else
                    k = 0;
            } else {
                hi = 0; /* all past pos: the first */
            }
            while (k < hi) {
                uint32_t mid = k + (hi - k) / 2;
                if (ms->ring[(ms->first + mid) % ms->cap].rev <= w->pos) k = mid + 1;
                else hi = mid;
            }
        }
#endif
        for (; k < ms->count; k++) {
            kctl__msev *e = &ms->ring[(ms->first + k) % ms->cap];
            kctl_obj *give;
            if (e->rev <= w->pos) continue;
            type = kctl__ms_ev_for(ms, w, e, &give);
            if (KCTL__MS_SELECTORS && type < 0) { /* (without selectors: never) */
                kctl__mutex_unlock(&ms->mu);
                return type; /* the watcher stays before this event: the next call tries again */
            }
            w->pos = at = e->rev;
            w->since_bookmark++;
            if (type) {
                ev->type = type;
                ev->obj = kctl_obj_ref(give);
#ifndef KCTL_NO_FAULTS
                if (w->break_after && ++w->delivered >= w->break_after) w->broken = true;
#endif
#if KCTL__MS_BATCH
                /* the events after it, while nothing but events is due
                   (no bookmarks counted, no break armed) */
                w->bfrom = w->bpos = at;
                for (k++; k < ms->count && w->bcount < KCTL__MS_BATCH && !ms->bookmark_every && !w->break_after; k++) {
                    e = &ms->ring[(ms->first + k) % ms->cap];
                    if ((type = kctl__ms_ev_for(ms, w, e, &give)) < 0) break; /* left for a later call */
                    w->pos = e->rev;
                    if (!type) continue;
                    w->batch[w->bcount].rev = e->rev;
                    w->batch[w->bcount].type = type;
                    w->batch[w->bcount++].obj = kctl_obj_ref(give);
                }
#endif
                goto emit;
            }
            if (ms->bookmark_every && w->since_bookmark >= ms->bookmark_every) {
                ev->type = KCTL_EVENT_BOOKMARK;
                goto emit;
            }
        }
        w->pos = at = ms->rev; /* nothing more for this watcher up to now */
        if (ms->bookmark_interval_ns) { /* quiet for long enough: say where we are */
            uint64_t now = kctl_clock_now(&ms->clock);
            if (now - w->last_emit_ns >= ms->bookmark_interval_ns) {
                w->last_emit_ns = now;
                ev->type = KCTL_EVENT_BOOKMARK;
                goto stamped;
            }
        }
        if (!timeout_ns || waited) break;
#ifdef KCTL_NO_THREADS
        break;
#else
        ms->waiters++;
        kctl__cond_wait_for(&ms->cv, &ms->mu, timeout_ns);
        ms->waiters--;
        waited = true;
#endif
    }
    kctl__mutex_unlock(&ms->mu);
    return KCTL_ERR_AGAIN;
emit: /* an event or a bookmark, at revision at */
    w->last_emit_ns = kctl_clock_now(&ms->clock);
stamped:
    w->since_bookmark = 0;
    kctl__ms_rv(ev->resource_version, at);
    kctl__mutex_unlock(&ms->mu);
    return KCTL_OK;
}

static const kctl_transport_vtable kctl__memstore_vt = {
    kctl__ms_vt_list, kctl__ms_vt_watch_open, kctl__ms_vt_watch_next, kctl__ms_vt_watch_close, kctl__ms_vt_get,
    kctl__ms_vt_create, kctl__ms_vt_update, kctl__ms_vt_update_status, kctl__ms_vt_patch, kctl__ms_vt_remove, NULL,
    kctl__ms_vt_watch_notify
};

KCTL_API kctl_transport kctl_memstore_transport(kctl_memstore *ms) {
    kctl_transport t;
    t.vt = &kctl__memstore_vt;
    t.self = ms;
    return t;
}

KCTL_API int kctl_memstore_apply(kctl_memstore *ms, const kctl_resource *res, const char *json, size_t len, kctl_obj **out,
                                 kctl_api_status *st) {
    return kctl__ms_req(ms, res, json, len, out, st, KCTL__MS_OWNER | KCTL_VERB_CREATE, NULL, 0, NULL);
}

KCTL_API int kctl_memstore_delete(kctl_memstore *ms, const kctl_resource *res, const char *name, kctl_api_status *st) {
    return kctl__ms_req(ms, res, NULL, 0, NULL, st, KCTL__MS_OWNER | KCTL_VERB_REMOVE, name, 0, NULL);
}

KCTL_API int kctl_memstore_get(kctl_memstore *ms, const kctl_resource *res, const char *name, kctl_obj **out, kctl_api_status *st) {
    return kctl__ms_get(ms, false, res, name, out, st);
}

KCTL_API uint64_t kctl_memstore_revision(kctl_memstore *ms) {
    uint64_t r;
    if (!ms) return 0;
    kctl__mutex_lock(&ms->mu);
    r = ms->rev;
    kctl__mutex_unlock(&ms->mu);
    return r;
}

KCTL_API int kctl_memstore_read_stats(kctl_memstore *ms, kctl_memstore_stats *out) {
    if (out) memset(out, 0, sizeof *out);
    if (!ms || !out) return KCTL_ERR_INVALID_ARG;
    kctl__mutex_lock(&ms->mu);
    out->objects = ms->objs.count;
    if (!KCTL__MS_BOUND) kctl__ms_count_bytes(ms); /* (not counted at every write: counted now) */
    out->bytes = ms->nbytes;
    out->history = ms->count;
    out->history_cap = ms->cap;
    out->refused_full = ms->refused_full;
    kctl__mutex_unlock(&ms->mu);
    return KCTL_OK;
}

/* ---- persistence. The file: a header line
     kctl-memstore 1 <revision> <uid sequence> <objects>
   then per object a line "<group/resource> <bytes>" and the document on a
   line of its own, then "end <FNV-1a 64 of everything before, hex>".
   Numbers are decimal without leading zeros (at most 2^63 - 1), the sum
   16 lowercase hex digits. A file loads whole or not at all, and only
   when each of its objects is one the store's writes could have made (see
   kctl__ms_load_ok), so whatever loads saves and loads again the same. */
static uint64_t kctl__fnv64(const char *p, size_t n) {
    uint64_t h = UINT64_C(0xcbf29ce484222325);
    size_t i;
    for (i = 0; i < n; i++) {
        h ^= (unsigned char)p[i];
        h *= UINT64_C(0x100000001b3);
    }
    return h;
}

static void kctl__ms_put_obj(kctl_jw *w, const char *rid, size_t rid_len, const kctl_obj *o) {
    char line[64];
    size_t len;
    const char *doc = kctl_obj_json(o, &len);
    kctl__jw_put(w, rid, rid_len);
    kctl__jw_put(w, line, (size_t)kctl__fmt(line, sizeof line, " %lu\n", (unsigned long)len));
    kctl__jw_put(w, doc, len);
    kctl__jw_put(w, "\n", 1);
}

/* The file's bytes for the store at revision rev with the pending write p
   (may be NULL) made. */
static KCTL__UNUSED int kctl__ms_serialize(kctl_memstore *ms, uint64_t rev, const kctl__mspending *p, kctl_jw *w) {
    char line[96];
    size_t i, count = ms->objs.count;
    if (p && p->e && !p->obj) count--;      /* a removal */
    else if (p && !p->e && p->obj) count++; /* a new object */
    kctl_jw_init_growable(w, &ms->allocator);
    kctl__jw_put(w, line, (size_t)kctl__fmt(line, sizeof line, "kctl-memstore 1 %llu %llu %lu\n", (unsigned long long)rev,
                                           (unsigned long long)ms->uid_seq + (p && !p->e && p->obj ? 1u : 0u), (unsigned long)count));
    for (i = 0; i < ms->objs.cap; i++) {
        kctl__msent *e = (kctl__msent *)ms->objs.slots[i].node;
        if (!e) continue;
        if (p && p->e == e) {
            if (p->obj) kctl__ms_put_obj(w, e->node.key, e->rid_len, p->obj);
            continue;
        }
        kctl__ms_put_obj(w, e->node.key, e->rid_len, e->obj);
    }
    if (p && !p->e && p->obj) kctl__ms_put_obj(w, p->rid, kctl__strlen(p->rid), p->obj);
    kctl__jw_put(w, line, (size_t)kctl__fmt(line, sizeof line, "end %016llx\n", (unsigned long long)kctl__fnv64(w->buf ? w->buf : "", w->len)));
    return w->err;
}

/* ---- the journal (see PERSISTENCE above kctl_memstore_desc): records
   appended to "<file>.journal" through the file layer, group commit,
   snapshots that fold it, and its replay at load. */
#define KCTL__JNL_MAGIC "kctl-journal 1\n"
#define KCTL__JNL_HDR 15u          /* strlen(KCTL__JNL_MAGIC) */
#define KCTL__JNL_FRAME 12u        /* length (4), FNV-1a 64 (8) */
#define KCTL__JNL_MAX (1u << 30)   /* a longer record is corrupt */

#ifndef KCTL_NO_FILES
static int kctl__fs_open(const char *path, int flags, void *ud) {
    int f = O_CLOEXEC;
    (void)ud;
    if (flags & KCTL_FS_DIR) f |= O_RDONLY;
    else if (flags & KCTL_FS_WRITE) f |= O_RDWR | O_CREAT | (flags & KCTL_FS_TRUNC ? O_TRUNC : 0) | (flags & KCTL_FS_APPEND ? O_APPEND : 0);
    else f |= O_RDONLY | O_NONBLOCK;
    return open(path, f, 0600);
}
static int64_t kctl__fs_read(int fd, void *buf, size_t n, void *ud) { (void)ud; return (int64_t)read(fd, buf, n); }
static int64_t kctl__fs_write(int fd, const void *buf, size_t n, void *ud) { (void)ud; return (int64_t)write(fd, buf, n); }
static int kctl__fs_sync(int fd, void *ud) { (void)ud; return fsync(fd); }
static int kctl__fs_truncate(int fd, uint64_t size, void *ud) { (void)ud; return ftruncate(fd, (off_t)size); }
static int kctl__fs_close(int fd, void *ud) { (void)ud; return close(fd); }
static int kctl__fs_rename(const char *from, const char *to, void *ud) { (void)ud; return rename(from, to); }
static int kctl__fs_unlink(const char *path, void *ud) { (void)ud; return unlink(path); }
#endif

KCTL_API kctl_fs kctl_fs_posix(void) {
    kctl_fs fs;
    memset(&fs, 0, sizeof fs);
#ifndef KCTL_NO_FILES
    fs.open_fn = kctl__fs_open;
    fs.read_fn = kctl__fs_read;
    fs.write_fn = kctl__fs_write;
    fs.sync_fn = kctl__fs_sync;
    fs.truncate_fn = kctl__fs_truncate;
    fs.close_fn = kctl__fs_close;
    fs.rename_fn = kctl__fs_rename;
    fs.unlink_fn = kctl__fs_unlink;
#endif
    return fs;
}

static int kctl__jnl_init(kctl_memstore *ms, const kctl_memstore_desc *d) {
#ifdef KCTL_NO_FILES
    /* no journal to keep (nothing is ever appended: a save is refused,
       so no record waits for a sync), but the desc's persistence
       settings are refused as with files */
    (void)ms;
    return d->sync > KCTL_MEMSTORE_SYNC_NEVER || (d->fs && (!d->fs->open_fn || !d->fs->read_fn || !d->fs->write_fn ||
        !d->fs->sync_fn || !d->fs->truncate_fn || !d->fs->close_fn || !d->fs->rename_fn || !d->fs->unlink_fn))
        ? KCTL_ERR_INVALID_ARG : KCTL_OK;
#else
    kctl__jnl *j = &ms->jnl;
    j->fd = -1;
    j->fs = d->fs ? *d->fs : kctl_fs_posix();
    j->logger = d->logger;
    if (d->sync > KCTL_MEMSTORE_SYNC_NEVER) return KCTL_ERR_INVALID_ARG;
    j->sync = d->sync;
    j->interval_ns = KCTL_MS(d->sync_interval_ms ? d->sync_interval_ms : 100);
    j->compact_bytes = d->compact_bytes ? d->compact_bytes : (uint64_t)1 << 20;
    if (d->fs && (!j->fs.open_fn || !j->fs.read_fn || !j->fs.write_fn || !j->fs.sync_fn || !j->fs.truncate_fn || !j->fs.close_fn ||
                  !j->fs.rename_fn || !j->fs.unlink_fn))
        return KCTL_ERR_INVALID_ARG;
    if (kctl__cond_init(&j->cv) != KCTL_OK) return KCTL_ERR_NOMEM;
    j->fd = -2; /* -2: the condition is there, nothing open */
    return KCTL_OK;
#endif
}

/* Sync (unless the policy never does) and close the journal. */
static void kctl__jnl_deinit(kctl_memstore *ms) {
    kctl__jnl *j = &ms->jnl;
    if (!KCTL__MS_SAVES || j->fd == -1) return; /* never initialized (without files: never is) */
    if (j->fd >= 0) {
        if (j->sync != KCTL_MEMSTORE_SYNC_NEVER && j->synced < j->seq) (void)j->fs.sync_fn(j->fd, j->fs.user_data);
        (void)j->fs.close_fn(j->fd, j->fs.user_data);
    }
    kctl__free(&ms->allocator, j->jpath);
    kctl__cond_deinit(&j->cv);
    j->fd = -1;
}

KCTL_API int kctl_memstore_read_persist_stats(kctl_memstore *ms, kctl_memstore_persist_stats *out) {
    if (!ms || !out) return KCTL_ERR_INVALID_ARG;
    kctl__mutex_lock(&ms->mu);
    *out = ms->jnl.st;
    out->journal_bytes = ms->jnl.size;
    kctl__mutex_unlock(&ms->mu);
    return KCTL_OK;
}

#ifndef KCTL_NO_FILES
/* data[0..len) written whole to fd (short writes go on): OK, or IO with
   *done the bytes that did reach the file. */
static int kctl__jnl_write_all(kctl__jnl *j, int fd, const char *data, size_t len, size_t *done) {
    size_t i = 0;
    int rc = KCTL_OK;
    while (i < len) {
        int64_t k = j->fs.write_fn(fd, data + i, len - i, j->fs.user_data);
        if (k < 0 && errno == EINTR) continue;
        if (k <= 0) {
            rc = KCTL_ERR_IO;
            break;
        }
        i += (size_t)k;
    }
    j->st.bytes_written += i;
    if (done) *done = i;
    return rc;
}

/* Replace the file at target with data[0..len) through the file layer:
   "<target>.tmp" written, fsynced, closed, renamed over target, then the
   directory fsynced. OK; IO (the temporary file is removed unless it was
   renamed; *replaced says whether target now holds data); NOMEM. */
static int kctl__jnl_replace(kctl_memstore *ms, const char *target, const char *data, size_t len, bool *replaced) {
    kctl__jnl *j = &ms->jnl;
    size_t tlen = kctl__strlen(target);
    char *tmp = (char *)kctl__alloc(&ms->allocator, tlen + 5);
    int fd, rc = KCTL_OK;
    *replaced = false;
    if (!tmp) return KCTL_ERR_NOMEM;
    kctl__memcpy(tmp, target, tlen);
    kctl__memcpy(tmp + tlen, ".tmp", 5);
    fd = j->fs.open_fn(tmp, KCTL_FS_WRITE | KCTL_FS_TRUNC, j->fs.user_data);
    if (fd < 0) rc = KCTL_ERR_IO;
    if (rc == KCTL_OK) rc = kctl__jnl_write_all(j, fd, data, len, NULL);
    if (fd >= 0 && rc == KCTL_OK && j->fs.sync_fn(fd, j->fs.user_data) != 0) rc = KCTL_ERR_IO;
    if (fd >= 0 && j->fs.close_fn(fd, j->fs.user_data) != 0) rc = KCTL_ERR_IO;
    if (rc == KCTL_OK && j->fs.rename_fn(tmp, target, j->fs.user_data) != 0) rc = KCTL_ERR_IO;
    if (rc == KCTL_OK) { /* make the rename itself durable */
        const char *slash = strrchr(target, '/');
        int dfd;
        *replaced = true;
        if (slash) {
            kctl__memcpy(tmp, target, (size_t)(slash - target));
            tmp[slash == target ? 1 : slash - target] = '\0';
        } else {
            kctl__memcpy(tmp, ".", 2);
        }
        dfd = j->fs.open_fn(tmp, KCTL_FS_DIR, j->fs.user_data);
        /* a file system that cannot sync a directory says EINVAL: nothing to wait for */
        if (dfd < 0 || (j->fs.sync_fn(dfd, j->fs.user_data) != 0 && errno != EINVAL)) rc = KCTL_ERR_IO;
        if (dfd >= 0) (void)j->fs.close_fn(dfd, j->fs.user_data);
    } else if (fd >= 0) {
        (void)j->fs.unlink_fn(tmp, j->fs.user_data);
    }
    kctl__free(&ms->allocator, tmp);
    return rc;
}

/* The file that path names for the store's file layer: through its
   symbolic links on the POSIX layer (kctl__port_file_target), path itself
   on any other (a port's file system has no links to follow). OK; IO;
   NOMEM. */
static int kctl__jnl_target(kctl_memstore *ms, const char *path, char **out) {
    size_t n = kctl__strlen(path);
    if (ms->jnl.fs.open_fn == kctl__fs_open) return kctl__port_file_target(path, &ms->allocator, out);
    if (!(*out = (char *)kctl__alloc(&ms->allocator, n + 1))) return KCTL_ERR_NOMEM;
    kctl__memcpy(*out, path, n + 1);
    return KCTL_OK;
}

/* The whole file at path read through the store's file layer into a new
   buffer (NUL-terminated; *len without the NUL). OK; NOT_FOUND only when
   nothing is there (open_fn says ENOENT; on the POSIX layer, a link to
   nothing is something, and only a regular file is read: a FIFO, a
   directory or a device is IO, as kctl__port_file_read has it); IO;
   TOO_LARGE past 2 GiB; NOMEM. */
static int kctl__jnl_read_all(kctl_memstore *ms, const char *path, char **out, size_t *len) {
    kctl__jnl *j = &ms->jnl;
    bool posix = j->fs.open_fn == kctl__fs_open;
    char *buf = NULL;
    size_t cap = 0, n = 0;
    int rc = KCTL_OK, fd = j->fs.open_fn(path, KCTL_FS_READ, j->fs.user_data);
    struct stat sb;
    *out = NULL;
    *len = 0;
    if (fd < 0) return errno == ENOENT && (!posix || lstat(path, &sb) != 0) ? KCTL_ERR_NOT_FOUND : KCTL_ERR_IO;
    if (posix && (fstat(fd, &sb) != 0 || !S_ISREG(sb.st_mode))) rc = KCTL_ERR_IO;
    while (rc == KCTL_OK) {
        int64_t k;
        if (n == cap) {
            size_t ncap = cap ? cap * 2 : 65536;
            char *nb = ncap <= (size_t)1 << 31 ? (char *)kctl__alloc(&ms->allocator, ncap + 1) : NULL;
            if (!nb) {
                rc = ncap > (size_t)1 << 31 ? KCTL_ERR_TOO_LARGE : KCTL_ERR_NOMEM;
                break;
            }
            if (n) kctl__memcpy(nb, buf, n);
            kctl__free(&ms->allocator, buf);
            buf = nb;
            cap = ncap;
        }
        k = j->fs.read_fn(fd, buf + n, cap - n, j->fs.user_data);
        if (k < 0 && errno == EINTR) continue;
        if (k < 0) rc = KCTL_ERR_IO;
        else if (k == 0) break;
        else n += (size_t)k;
    }
    (void)j->fs.close_fn(fd, j->fs.user_data);
    if (rc != KCTL_OK) {
        kctl__free(&ms->allocator, buf);
        return rc;
    }
    if (!buf && !(buf = (char *)kctl__alloc(&ms->allocator, 1))) return KCTL_ERR_NOMEM;
    buf[n] = '\0';
    *out = buf;
    *len = n;
    return KCTL_OK;
}

/* The journal open for appending at j->size: opened (created with its
   header) if it is not, and anything past j->size (a torn tail, a record
   that could not be written whole) cut off and synced first. OK, IO. */
static int kctl__jnl_open(kctl_memstore *ms) {
    kctl__jnl *j = &ms->jnl;
    size_t done = 0;
    if (j->fd >= 0) return KCTL_OK;
    if ((j->fd = j->fs.open_fn(j->jpath, KCTL_FS_WRITE | KCTL_FS_APPEND, j->fs.user_data)) < 0) {
        j->fd = -2;
        return KCTL_ERR_IO;
    }
    j->exists = true;
    if (j->file_len == j->size && j->size >= KCTL__JNL_HDR) return KCTL_OK;
    if (j->size < KCTL__JNL_HDR) j->size = 0; /* no whole header: begin again */
    if (j->fs.truncate_fn(j->fd, j->size, j->fs.user_data) != 0) goto fail;
    j->file_len = j->size;
    if (j->size == 0) {
        if (kctl__jnl_write_all(j, j->fd, KCTL__JNL_MAGIC, KCTL__JNL_HDR, &done) != KCTL_OK) {
            j->file_len = done;
            goto fail;
        }
        j->size = j->file_len = KCTL__JNL_HDR;
    }
    if (j->fs.sync_fn(j->fd, j->fs.user_data) != 0) goto fail;
    return KCTL_OK;
fail:
    (void)j->fs.close_fn(j->fd, j->fs.user_data);
    j->fd = -2;
    return KCTL_ERR_IO;
}
#endif

/* Write a snapshot of the store as it is (revision ms->rev) and empty the
   journal: a compaction, and what kctl_memstore_save does. Everything
   appended so far is durable after it. It never releases the lock (a
   write calls it between its decision and its making); a group commit's
   fsync may be in flight on the journal meanwhile, which is fine: the
   descriptor stays open. OK; IO (the store on
   disk is as it was); NOMEM; INVALID_ARG without a path. Lock held. */
static int kctl__ms_snapshot(kctl_memstore *ms) {
#ifdef KCTL_NO_FILES
    (void)ms;
    return KCTL_ERR_INVALID_ARG;
#else
    kctl__jnl *j = &ms->jnl;
    char *target = NULL;
    kctl_jw w;
    bool replaced = false;
    int rc;
    if (!ms->path) return KCTL_ERR_INVALID_ARG;
    rc = kctl__ms_serialize(ms, ms->rev, NULL, &w);
    if (rc == KCTL_OK) rc = kctl__jnl_target(ms, ms->path, &target);
    if (rc == KCTL_OK) rc = kctl__jnl_replace(ms, target, w.buf, w.len, &replaced);
    /* only a snapshot that is surely there may empty the journal: the
       records it holds are skipped at load, the others replayed */
    if (rc == KCTL_OK && (j->fd >= 0 || j->exists)) {
        if (j->fd >= 0 || (rc = kctl__jnl_open(ms)) == KCTL_OK) {
            if (j->fs.truncate_fn(j->fd, KCTL__JNL_HDR, j->fs.user_data) != 0 || j->fs.sync_fn(j->fd, j->fs.user_data) != 0) {
                rc = KCTL_ERR_IO;
                j->broken = true; /* where the next record would go is unknown: another snapshot first */
            } else {
                j->size = j->file_len = KCTL__JNL_HDR;
            }
        }
    }
    if (rc == KCTL_OK) {
        j->snap_bytes = w.len;
        j->have_snap = true;
        j->synced = j->seq;
        j->broken = false;
        j->st.snapshots++;
        kctl__cond_broadcast(&j->cv);
    }
    kctl__free(&ms->allocator, target);
    kctl_jw_free(&w);
    return rc;
#endif
}

/* Append the record of the write about to take revision rev (p: see
   kctl__mspending) to the journal, before it is made. A record that
   cannot be written whole is cut off again (a failed cut, or a journal
   broken before, asks a snapshot of the store first). A journal that
   cannot take it (a full disk) is folded into a snapshot once, as that
   may make room, then tried again. OK; IO (nothing of it is in the
   journal, nor made); NOMEM. Lock held. */
static int kctl__jnl_append(kctl_memstore *ms, uint64_t rev, const kctl__mspending *p) {
#ifdef KCTL_NO_FILES
    (void)ms; (void)rev; (void)p;
    return KCTL_ERR_INVALID_ARG;
#else
    kctl__jnl *j = &ms->jnl;
    char key[1024], head[1100];
    const kctl_obj *o = p->obj;
    const char *doc = NULL;
    size_t dlen = 0, hl, done = 0;
    uint64_t sum;
    uint32_t plen;
    unsigned char frame[KCTL__JNL_FRAME];
    kctl_jw w;
    int rc, attempt, i;
    if (!ms->path) return KCTL_ERR_INVALID_ARG;
    if (p->e) {
        if (p->e->node.len >= sizeof key) return KCTL_ERR_INVALID_ARG;
        kctl__memcpy(key, p->e->node.key, (size_t)p->e->node.len + 1);
    } else if (!o || kctl__ms_key(p->rid, kctl_obj_namespace(o), kctl_obj_name(o), key, sizeof key) != KCTL_OK) {
        return KCTL_ERR_INVALID_ARG;
    }
    if (o) doc = kctl_obj_json(o, &dlen);
    hl = (size_t)kctl__fmt(head, sizeof head, "%c %llu %llu %s\n", o ? 'P' : 'D', (unsigned long long)rev, (unsigned long long)p->seq, key);
    if (hl >= sizeof head || dlen > KCTL__JNL_MAX - hl) return KCTL_ERR_TOO_LARGE;
    plen = (uint32_t)(hl + dlen);
    for (i = 0; i < 4; i++) frame[i] = (unsigned char)(plen >> (8 * i));
    kctl_jw_init_growable(&w, &ms->allocator);
    kctl__jw_put(&w, (const char *)frame, KCTL__JNL_FRAME);
    kctl__jw_put(&w, head, hl);
    if (dlen) kctl__jw_put(&w, doc, dlen);
    if (w.err) {
        rc = w.err;
        kctl_jw_free(&w);
        return rc;
    }
    sum = kctl__fnv64(w.buf, 4); /* the length, then the payload */
    { /* continued over the payload: FNV-1a runs byte by byte */
        size_t k;
        for (k = KCTL__JNL_FRAME; k < w.len; k++) {
            sum ^= (unsigned char)w.buf[k];
            sum *= UINT64_C(0x100000001b3);
        }
    }
    for (i = 0; i < 8; i++) w.buf[4 + i] = (char)(unsigned char)(sum >> (8 * i));
    for (attempt = 0;; attempt++) {
        rc = KCTL_OK;
        /* the first record of a new store goes after a snapshot, so the
           path names a store at once (a link to it is no link to nothing) */
        if (j->broken || !j->have_snap || (j->size > KCTL__JNL_HDR && attempt == 1)) rc = kctl__ms_snapshot(ms);
        if (rc == KCTL_OK) rc = kctl__jnl_open(ms);
        if (rc == KCTL_OK && (rc = kctl__jnl_write_all(j, j->fd, w.buf, w.len, &done)) != KCTL_OK) {
            /* cut off what reached the file, so nothing of this write lasts */
            if (done && (j->fs.truncate_fn(j->fd, j->size, j->fs.user_data) != 0)) j->broken = true;
        }
        if (rc == KCTL_OK || attempt == 1 || (j->size <= KCTL__JNL_HDR && !j->broken)) break;
    }
    if (rc == KCTL_OK) {
        j->size += w.len;
        j->file_len = j->size;
        j->seq++;
        j->st.records++;
        if (j->flusher_on && j->seq == j->synced + 1) kctl__cond_broadcast(&j->cv); /* a record waits: time its sync */
    }
    kctl_jw_free(&w);
    return rc;
#endif
}

/* Make the journal durable up to record seq (group commit: the first
   caller to find no fsync in flight syncs everything appended so far,
   without the store's lock; callers that come meanwhile wait and share the
   next one). OK; IO (a sync failed, now or before: the journal is broken
   until a snapshot succeeds). Lock held (released while syncing). */
static KCTL__UNUSED int kctl__jnl_sync_upto(kctl_memstore *ms, uint64_t seq) {
    kctl__jnl *j = &ms->jnl;
    while (j->synced < seq) {
        uint64_t upto;
        int fd, r;
        if (j->broken) return KCTL_ERR_IO;
        if (j->syncing) {
            kctl__cond_wait(&j->cv, &ms->mu);
            continue;
        }
        upto = j->seq;
        fd = j->fd;
        j->syncing = true;
        kctl__mutex_unlock(&ms->mu);
        r = j->fs.sync_fn(fd, j->fs.user_data);
        kctl__mutex_lock(&ms->mu);
        j->syncing = false;
        j->st.syncs++;
        if (r == 0) {
            if (upto > j->synced) j->synced = upto;
            j->last_sync_ns = kctl_clock_now(&ms->clock);
        } else {
            j->broken = true;
            kctl__log(&j->logger, 1, KCTL_LOGITEM_MEMSTORE_JOURNAL_SYNC_FAILED);
        }
        kctl__cond_broadcast(&j->cv);
    }
    return KCTL_OK;
}

/* After a write with journal record number seq was made: wait until the
   record is durable as the policy asks (EVERY: now; INTERVAL: now if the
   interval since the last fsync has passed, else kctl__jnl_flush_due
   does it on time). Then a journal past its size is folded into a
   snapshot (a failure is logged and the journal kept). OK; IO (the fsync
   failed: the journal is broken until a snapshot succeeds). Lock held
   (released while syncing). */
static int kctl__jnl_durable(kctl_memstore *ms, uint64_t seq) {
#ifdef KCTL_NO_FILES
    (void)ms; (void)seq;
    return KCTL_ERR_INVALID_ARG;
#else
    kctl__jnl *j = &ms->jnl;
    int rc = KCTL_OK;
    bool due = j->sync == KCTL_MEMSTORE_SYNC_EVERY;
    if (j->sync == KCTL_MEMSTORE_SYNC_INTERVAL) due = kctl_clock_now(&ms->clock) - j->last_sync_ns >= j->interval_ns;
    if (due) rc = kctl__jnl_sync_upto(ms, seq);
    if (rc == KCTL_OK && j->size > j->compact_bytes && j->size > j->snap_bytes &&
        kctl__ms_snapshot(ms) != KCTL_OK)
        kctl__log(&j->logger, 1, KCTL_LOGITEM_MEMSTORE_COMPACT_FAILED);
    return rc;
#endif
}

/* SYNC_INTERVAL's timer: sync the records that wait once the interval
   since the last fsync has passed; *next: when the next sync is due
   (UINT64_MAX: nothing waits, or another policy). OK; IO (the journal is
   broken: nothing is due until a snapshot mends it). Lock held. */
static int kctl__jnl_flush_due(kctl_memstore *ms, uint64_t *next) {
    kctl__jnl *j = &ms->jnl;
    uint64_t due;
    int rc;
    *next = UINT64_MAX;
    if (!ms->save_on_write || j->sync != KCTL_MEMSTORE_SYNC_INTERVAL || j->synced >= j->seq || j->fd < 0) return KCTL_OK;
    if (j->broken) return KCTL_ERR_IO;
    due = kctl__add_sat(j->last_sync_ns, j->interval_ns);
    if (kctl_clock_now(&ms->clock) < due) {
        *next = due;
        return KCTL_OK;
    }
    rc = kctl__jnl_sync_upto(ms, j->seq);
    if (rc == KCTL_OK && j->synced < j->seq) *next = kctl__add_sat(j->last_sync_ns, j->interval_ns); /* written meanwhile */
    return rc;
}

#ifndef KCTL_NO_THREADS
/* The flusher thread of a SYNC_INTERVAL store on a real-time clock: sleeps
   until a record waits, then until its sync is due, and syncs it. */
static KCTL__UNUSED void *kctl__jnl_flusher(void *arg) {
    kctl_memstore *ms = (kctl_memstore *)arg;
    kctl__jnl *j = &ms->jnl;
    kctl__mutex_lock(&ms->mu);
    while (!j->flusher_stop) {
        uint64_t next = UINT64_MAX, now;
        (void)kctl__jnl_flush_due(ms, &next); /* a failed sync is logged; the writers see IO */
        if (j->flusher_stop) break;
        now = kctl_clock_now(&ms->clock);
        if (next == UINT64_MAX) kctl__cond_wait(&j->cv, &ms->mu);
        else if (next > now) kctl__cond_wait_for(&j->cv, &ms->mu, next - now);
    }
    kctl__mutex_unlock(&ms->mu);
    return NULL;
}
#endif

KCTL_API int kctl_memstore_flush(kctl_memstore *ms, uint64_t *next_ns) {
    uint64_t next = UINT64_MAX;
    int rc;
    if (next_ns) *next_ns = UINT64_MAX;
    if (!ms) return KCTL_ERR_INVALID_ARG;
    kctl__mutex_lock(&ms->mu);
    rc = kctl__jnl_flush_due(ms, &next);
    kctl__mutex_unlock(&ms->mu);
    if (next_ns) *next_ns = next;
    return rc;
}

KCTL_API int kctl_memstore_save(kctl_memstore *ms) {
    int rc;
    if (!ms) return KCTL_ERR_INVALID_ARG;
    kctl__mutex_lock(&ms->mu);
    rc = kctl__ms_snapshot(ms);
    kctl__mutex_unlock(&ms->mu);
    return rc;
}

/* Free every object of a store that is being loaded. */
static void kctl__ms_unload(kctl_memstore *ms) {
    size_t i;
    for (i = 0; i < ms->objs.cap; i++) {
        kctl__msent *e = (kctl__msent *)ms->objs.slots[i].node;
        if (!e) continue;
        kctl_obj_unref(e->obj);
        kctl__free(&ms->allocator, e);
    }
    kctl__map_clear(&ms->objs);
}

/* A number of the file at *p ending in stop (see above): its value, and
   *p moved past stop. */
static bool kctl__ms_num(const char **p, const char *end, char stop, uint64_t *out) {
    const char *s = *p;
    uint64_t x = 0;
    if (s >= end || !kctl__jdigit(*s) || (*s == '0' && s + 1 < end && kctl__jdigit(s[1]))) return false;
    for (; s < end && kctl__jdigit(*s); s++) {
        if (x > (UINT64_C(0x7fffffffffffffff) - (uint64_t)(*s - '0')) / 10) return false;
        x = x * 10 + (uint64_t)(*s - '0');
    }
    if (s >= end || *s != stop) return false;
    *out = x;
    *p = s + 1;
    return true;
}

/* The sequence number n of a uid the store makes
   ("00000000-0000-4000-8000-%012llx" of n): true and n; false for any
   other uid. */
static bool kctl__ms_uid_num(const char *uid, uint64_t *n) {
    static const char form[] = "00000000-0000-4000-8000-";
    char again[48];
    const char *s;
    uint64_t x = 0;
    if (kctl__strncmp(uid, form, sizeof form - 1) != 0 || kctl__strlen(uid) > sizeof form - 1 + 16) return false;
    for (s = uid + sizeof form - 1; *s; s++) {
        if (*s >= '0' && *s <= '9') x = x * 16 + (uint64_t)(*s - '0');
        else if (*s >= 'a' && *s <= 'f') x = x * 16 + (uint64_t)(*s - 'a' + 10);
        else return false;
    }
    kctl__fmt(again, sizeof again, "%s%012llx", form, (unsigned long long)x);
    *n = x;
    return kctl__strcmp(again, uid) == 0;
}

typedef struct kctl__msname {
    const char *s;
    size_t n;
} kctl__msname;

static int kctl__ms_cmp_name(const void *a, const void *b) {
    const kctl__msname *x = (const kctl__msname *)a, *y = (const kctl__msname *)b;
    int c = kctl__memcmp(x->s, y->s, x->n < y->n ? x->n : y->n);
    return c ? c : (x->n > y->n) - (x->n < y->n);
}

/* Whether every member name of object obj in j is there once (a write
   stores the top level and the metadata so; repeated names could be read
   two ways): OK, PROTO, NOMEM. */
static int kctl__ms_names_once(kctl_memstore *ms, const kctl_json *j, uint32_t obj) {
    const kctl_json_tok *t;
    kctl__msname *v;
    char *arena = NULL;
    size_t raw = 0, used = 0, c;
    uint32_t i, k;
    int rc = KCTL_OK;
    if (kctl_json_type_of(j, obj) != KCTL_JSON_OBJECT || (t = &j->toks[obj])->size < 2) return KCTL_OK;
    for (i = obj + 1, k = 0; k < t->size; k++, i += 1 + j->toks[i + 1].skip)
        if (j->toks[i].escaped) raw += j->toks[i].end - j->toks[i].start + 1;
    if (!(v = (kctl__msname *)kctl__alloc(&ms->allocator, t->size * sizeof *v)) ||
        (raw && !(arena = (char *)kctl__alloc(&ms->allocator, raw)))) {
        kctl__free(&ms->allocator, v);
        return KCTL_ERR_NOMEM;
    }
    for (i = obj + 1, k = 0; k < t->size; k++, i += 1 + j->toks[i + 1].skip) {
        if (!j->toks[i].escaped) {
            v[k].s = j->text + j->toks[i].start;
            v[k].n = j->toks[i].end - j->toks[i].start;
            continue;
        }
        kctl_json_string(j, i, arena + used, raw - used, &v[k].n); /* unescaped is never longer */
        v[k].s = arena + used;
        used += v[k].n + 1;
    }
    kctl__sort(v, t->size, sizeof *v, kctl__ms_cmp_name);
    for (c = 1; c < t->size && rc == KCTL_OK; c++)
        if (kctl__ms_cmp_name(&v[c - 1], &v[c]) == 0) rc = KCTL_ERR_PROTO;
    kctl__free(&ms->allocator, arena);
    kctl__free(&ms->allocator, v);
    return rc;
}

/* Whether a loaded object (in rid, in a file at revision rev with uid
   sequence seq) is one the store's writes could have made: a valid
   resource; names and metadata as a write checks them (kctl_apisrv_check);
   no member named twice at the top or in metadata; a uid (and one the
   store made only from its sequence so far, or the next create would make
   it again); a resourceVersion that is a revision of this file, as the
   store writes it; generation 1 or more; a deletionTimestamp only with
   finalizers (the write that removes the last one removes the object).
   OK, PROTO, NOMEM. */
static int kctl__ms_load_ok(kctl_memstore *ms, const char *rid, const kctl_obj *o, uint64_t rev, uint64_t seq) {
    char group[256], resource[256], rv[24];
    const char *slash = strrchr(rid, '/'), *doc;
    kctl_resource res;
    kctl__jdoc d;
    uint64_t orv, n;
    size_t len;
    int rc;
    if (!slash || (size_t)(slash - rid) >= sizeof group || kctl__strlen(slash + 1) >= sizeof resource) return KCTL_ERR_PROTO;
    kctl__memcpy(group, rid, (size_t)(slash - rid));
    group[slash - rid] = '\0';
    kctl__memcpy(resource, slash + 1, kctl__strlen(slash + 1) + 1);
    if (!kctl__ms_name_ok(group, true) || !kctl__ms_name_ok(resource, false)) return KCTL_ERR_PROTO;
    if (!*kctl_obj_uid(o) || (kctl__ms_uid_num(kctl_obj_uid(o), &n) && (n == 0 || n > seq))) return KCTL_ERR_PROTO;
    if (!kctl_obj_resource_version_u64(o, &orv) || orv < 1 || orv > rev) return KCTL_ERR_PROTO;
    kctl__fmt(rv, sizeof rv, "%llu", (unsigned long long)orv);
    if (kctl__strcmp(rv, kctl_obj_resource_version(o)) != 0 || kctl_obj_generation(o) < 1) return KCTL_ERR_PROTO;
    if (kctl_obj_deletion_timestamp(o) && kctl_obj_finalizer_count(o) == 0) return KCTL_ERR_PROTO;
    memset(&res, 0, sizeof res);
    res.group = group;
    res.resource = resource;
    if ((rc = kctl_apisrv_check(&res, o, &ms->allocator, NULL)) != KCTL_OK) return rc == KCTL_ERR_NOMEM ? rc : KCTL_ERR_PROTO;
    doc = kctl_obj_json(o, &len);
    if ((rc = kctl__jdoc_parse(&d, doc, len, &ms->allocator, NULL)) == KCTL_OK &&
        (rc = kctl__ms_names_once(ms, &d.j, 0)) == KCTL_OK)
        rc = kctl__ms_names_once(ms, &d.j, kctl_json_member(&d.j, 0, "metadata"));
    kctl__jdoc_free(&d);
    return rc == KCTL_OK || rc == KCTL_ERR_NOMEM ? rc : KCTL_ERR_PROTO;
}

static KCTL__UNUSED int kctl__ms_cmp_u64(const void *a, const void *b) { /* (small builds' load check) */
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return (x > y) - (x < y);
}

static KCTL__UNUSED int kctl__ms_cmp_str(const void *a, const void *b) {
    return kctl__strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* Whether no two loaded objects share a uid or a resourceVersion (every
   write makes a revision of its own, every create a uid): OK, PROTO,
   NOMEM. */
static int kctl__ms_load_unique(kctl_memstore *ms) {
    size_t i, n = 0;
    int rc = KCTL_OK;
#if !KCTL_SMALL
    /* rvs and hashes of uids radix sorted (heap sorting the uids with
       strcmp was a quarter of a 100,000-object load); uids whose hashes
       are alike compared as strings */
    kctl__msrec *blk, *r;
    size_t j, k, *cnt;
    if (ms->objs.count < 2) return KCTL_OK;
    if (ms->objs.count > (SIZE_MAX - 256 * sizeof(size_t)) / (2 * sizeof *blk) ||
        !(blk = (kctl__msrec *)kctl__alloc(&ms->allocator, 2 * ms->objs.count * sizeof *blk + 256 * sizeof(size_t))))
        return KCTL_ERR_NOMEM;
    cnt = (size_t *)(void *)(blk + 2 * ms->objs.count);
    for (i = 0; i < ms->objs.cap; i++) {
        kctl__msent *e = (kctl__msent *)ms->objs.slots[i].node;
        if (!e) continue;
        kctl_obj_resource_version_u64(e->obj, &blk[n].k);
        blk[n++].p = e->obj;
    }
    r = kctl__ms_radix(blk, blk + n, cnt, n);
    for (i = 1; i < n; i++)
        if (r[i].k == r[i - 1].k) rc = KCTL_ERR_PROTO;
    for (i = 0; i < n; i++) {
        const char *u = kctl_obj_uid((const kctl_obj *)r[i].p);
        r[i].k = kctl__hash(u, kctl__strlen(u));
    }
    r = kctl__ms_radix(r, r == blk ? blk + n : blk, cnt, n);
    for (i = 0; i < n && rc == KCTL_OK; i = j) {
        for (j = i + 1; j < n && r[j].k == r[i].k; j++) { }
        for (k = i; k + 1 < j && rc == KCTL_OK; k++) { /* (a run longer than 2: as good as never) */
            size_t m;
            for (m = k + 1; m < j; m++)
                if (kctl__strcmp(kctl_obj_uid((const kctl_obj *)r[k].p), kctl_obj_uid((const kctl_obj *)r[m].p)) == 0) rc = KCTL_ERR_PROTO;
        }
    }
    kctl__free(&ms->allocator, blk);
#else
    uint64_t *rvs;
    const char **uids;
    if (ms->objs.count < 2) return KCTL_OK;
    rvs = (uint64_t *)kctl__alloc(&ms->allocator, ms->objs.count * sizeof *rvs);
    uids = (const char **)kctl__alloc(&ms->allocator, ms->objs.count * sizeof *uids);
    if (!rvs || !uids) {
        kctl__free(&ms->allocator, rvs);
        kctl__free(&ms->allocator, uids);
        return KCTL_ERR_NOMEM;
    }
    for (i = 0; i < ms->objs.cap; i++) {
        kctl__msent *e = (kctl__msent *)ms->objs.slots[i].node;
        if (!e) continue;
        kctl_obj_resource_version_u64(e->obj, &rvs[n]);
        uids[n++] = kctl_obj_uid(e->obj);
    }
    kctl__sort(rvs, n, sizeof *rvs, kctl__ms_cmp_u64);
    kctl__sort(uids, n, sizeof *uids, kctl__ms_cmp_str);
    for (i = 1; i < n; i++)
        if (rvs[i] == rvs[i - 1] || kctl__strcmp(uids[i], uids[i - 1]) == 0) rc = KCTL_ERR_PROTO;
    kctl__free(&ms->allocator, rvs);
    kctl__free(&ms->allocator, uids);
#endif
    return rc;
}

/* Load a file's bytes buf[0..len) into the empty store: all of it, or
   nothing (PROTO; NOMEM). */
static KCTL__UNUSED int kctl__ms_load_buf(kctl_memstore *ms, const char *buf, size_t len) {
    const char *p, *trailer;
    uint64_t rev, seq, count, sum = 0, i;
    int rc = KCTL_ERR_PROTO;
    /* the trailer: "end <16 hex>\n" over everything before it */
    if (len < 21 || buf[len - 1] != '\n') goto out;
    trailer = buf + len - 21;
    if (kctl__memcmp(trailer, "end ", 4) != 0) goto out;
    for (p = trailer + 4; p < trailer + 20; p++) {
        if (*p >= '0' && *p <= '9') sum = sum << 4 | (uint64_t)(*p - '0');
        else if (*p >= 'a' && *p <= 'f') sum = sum << 4 | (uint64_t)(*p - 'a' + 10);
        else goto out;
    }
    if (sum != kctl__fnv64(buf, (size_t)(trailer - buf))) goto out;
    p = buf;
    if ((size_t)(trailer - p) < 16 || kctl__memcmp(p, "kctl-memstore 1 ", 16) != 0) goto out;
    p += 16;
    if (!kctl__ms_num(&p, trailer, ' ', &rev) || !kctl__ms_num(&p, trailer, ' ', &seq) || !kctl__ms_num(&p, trailer, '\n', &count))
        goto out;
    for (i = 0; i < count; i++) {
        char rid[256], key[1024];
        const char *sp = p;
        uint64_t n;
        size_t rl;
        kctl_obj *o = NULL;
        kctl__msent *e = NULL;
        while (sp < trailer && *sp != ' ' && *sp != '\n') sp++;
        rl = (size_t)(sp - p);
        if (sp >= trailer || *sp != ' ' || rl == 0 || rl >= sizeof rid || kctl__memchr(p, '\0', rl)) goto out;
        kctl__memcpy(rid, p, rl);
        rid[rl] = '\0';
        p = sp + 1;
        if (!kctl__ms_num(&p, trailer, '\n', &n) || (uint64_t)(trailer - p) < n + 1 || p[n] != '\n') goto out;
        if ((rc = kctl_obj_parse(p, (size_t)n, &ms->obj_opts, &o)) != KCTL_OK) {
            if (rc != KCTL_ERR_NOMEM) rc = KCTL_ERR_PROTO;
            goto out;
        }
        p += n + 1;
        if ((rc = kctl__ms_load_ok(ms, rid, o, rev, seq)) == KCTL_OK &&
            (kctl__ms_key(rid, kctl_obj_namespace(o), kctl_obj_name(o), key, sizeof key) != KCTL_OK || kctl__ms_find(ms, key)))
            rc = KCTL_ERR_PROTO; /* the same object twice */
        if (rc == KCTL_OK && !(e = kctl__ms_entry(ms, key, rl, o))) rc = KCTL_ERR_NOMEM;
        if (rc != KCTL_OK) {
            kctl_obj_unref(o);
            goto out;
        }
        kctl__map_insert(&ms->objs, &e->node);
        rc = KCTL_ERR_PROTO;
    }
    if (p != trailer) goto out;
    if ((rc = kctl__ms_load_unique(ms)) != KCTL_OK) goto out;
    ms->rev = ms->compacted = rev; /* no history survives: older watches get GONE */
    kctl__ms_batches_compacted(ms, rev);
    ms->uid_seq = seq;
out:
    if (rc != KCTL_OK) kctl__ms_unload(ms); /* nothing half-loaded stays */
    return rc;
}

/* Replay one record's payload p[0..n) onto the store (at revision
   ms->rev): OK (made, or skipped when the snapshot holds it: *skipped;
   only records before the first one replayed may be);
   PROTO when it is not a write the store could have made next; NOMEM. */
static int kctl__jnl_replay_one(kctl_memstore *ms, const char *p, size_t n, bool may_skip, bool *skipped) {
    const char *end = p + n, *nl, *key;
    char rid[256];
    uint64_t rev, seq, orv;
    size_t klen, rl;
    kctl__msent *e;
    kctl_obj *o = NULL;
    char op;
    int rc;
    *skipped = false;
    if (n < 2 || (p[0] != 'P' && p[0] != 'D') || p[1] != ' ') return KCTL_ERR_PROTO;
    op = p[0];
    p += 2;
    if (!kctl__ms_num(&p, end, ' ', &rev) || !kctl__ms_num(&p, end, ' ', &seq)) return KCTL_ERR_PROTO;
    if (!(nl = (const char *)kctl__memchr(p, '\n', (size_t)(end - p)))) return KCTL_ERR_PROTO;
    key = p;
    klen = (size_t)(nl - p);
    if (rev <= ms->rev && may_skip) { /* the snapshot holds it */
        *skipped = true;
        return KCTL_OK;
    }
    if (rev != ms->rev + 1 || seq < ms->uid_seq || klen == 0 || klen >= KCTL_MAX_KEY_LEN || kctl__memchr(key, '\0', klen)) return KCTL_ERR_PROTO;
    for (rl = 0; rl < klen && key[rl] != '|'; rl++) { }
    if (rl == klen || rl >= sizeof rid) return KCTL_ERR_PROTO;
    kctl__memcpy(rid, key, rl);
    rid[rl] = '\0';
    {
        char k[KCTL_MAX_KEY_LEN + 1];
        kctl__memcpy(k, key, klen);
        k[klen] = '\0';
        e = kctl__ms_find(ms, k);
        if (op == 'D') {
            if (!e || nl + 1 != end) return KCTL_ERR_PROTO;
            kctl__ms_drop(ms, e);
        } else {
            char built[1024];
            if ((rc = kctl_obj_parse(nl + 1, (size_t)(end - nl - 1), &ms->obj_opts, &o)) != KCTL_OK)
                return rc == KCTL_ERR_NOMEM ? rc : KCTL_ERR_PROTO;
            /* as a write makes it: valid, at this revision, and under its own key */
            rc = kctl__ms_load_ok(ms, rid, o, rev, seq);
            if (rc == KCTL_OK && (kctl__ms_key(rid, kctl_obj_namespace(o), kctl_obj_name(o), built, sizeof built) != KCTL_OK ||
                                  kctl__strcmp(built, k) != 0 || !kctl_obj_resource_version_u64(o, &orv) || orv != rev))
                rc = KCTL_ERR_PROTO;
            if (rc == KCTL_OK && !e) {
                kctl__msent *fresh = kctl__ms_entry(ms, k, rl, o);
                if (!fresh) rc = KCTL_ERR_NOMEM;
                else kctl__map_insert(&ms->objs, &fresh->node);
            } else if (rc == KCTL_OK) {
                kctl_obj_unref(e->obj);
                e->obj = o;
                e->cur.obj = NULL;
            }
            if (rc != KCTL_OK) {
                kctl_obj_unref(o);
                return rc;
            }
        }
    }
    ms->rev = ms->compacted = rev;
    kctl__ms_batches_compacted(ms, rev);
    ms->uid_seq = seq;
    return KCTL_OK;
}

/* Whether a record's payload p[0..n) names a revision past rev + 1. */
static bool kctl__jnl_gap(const unsigned char *p, size_t n, uint64_t rev) {
    const char *s = (const char *)p + 2;
    uint64_t r;
    return n > 2 && kctl__ms_num(&s, (const char *)p + n, ' ', &r) && r > rev + 1;
}

/* Replay the journal's bytes buf[0..len) onto the store loaded from the
   snapshot: every whole, valid record in order, up to the first that is
   not (logged; see PERSISTENCE). Sets the journal's valid length. OK;
   PROTO when the file is no journal (its header is wrong); NOMEM. */
static KCTL__UNUSED int kctl__jnl_replay(kctl_memstore *ms, const char *buf, size_t len) {
    kctl__jnl *j = &ms->jnl;
    size_t off = KCTL__JNL_HDR;
    uint32_t stop = 0;
    int rc = KCTL_OK;
    j->file_len = len;
    j->exists = true;
    if (len < KCTL__JNL_HDR) { /* cut while it was made: begin again */
        if (kctl__memcmp(buf, KCTL__JNL_MAGIC, len) != 0) return KCTL_ERR_PROTO;
        j->size = 0;
        j->st.dropped_bytes = len;
        return KCTL_OK;
    }
    if (kctl__memcmp(buf, KCTL__JNL_MAGIC, KCTL__JNL_HDR) != 0) return KCTL_ERR_PROTO;
    while (off < len) {
        const unsigned char *f = (const unsigned char *)buf + off;
        uint64_t want = 0, sum;
        uint32_t plen = 0;
        size_t k;
        bool skipped;
        int i;
        if (len - off < KCTL__JNL_FRAME) {
            stop = KCTL_LOGITEM_MEMSTORE_JOURNAL_TORN;
            break;
        }
        for (i = 0; i < 4; i++) plen |= (uint32_t)f[i] << (8 * i);
        for (i = 0; i < 8; i++) want |= (uint64_t)f[4 + i] << (8 * i);
        if (plen > KCTL__JNL_MAX) {
            stop = KCTL_LOGITEM_MEMSTORE_JOURNAL_CORRUPT;
            break;
        }
        if (plen > len - off - KCTL__JNL_FRAME) { /* past the end: cut while it was written */
            stop = KCTL_LOGITEM_MEMSTORE_JOURNAL_TORN;
            break;
        }
        sum = kctl__fnv64((const char *)f, 4);
        for (k = 0; k < plen; k++) {
            sum ^= f[KCTL__JNL_FRAME + k];
            sum *= UINT64_C(0x100000001b3);
        }
        if (sum != want) { /* the last record, garbled as a crash leaves one, or damage */
            stop = off + KCTL__JNL_FRAME + plen == len ? KCTL_LOGITEM_MEMSTORE_JOURNAL_TORN : KCTL_LOGITEM_MEMSTORE_JOURNAL_CORRUPT;
            break;
        }
        rc = kctl__jnl_replay_one(ms, (const char *)f + KCTL__JNL_FRAME, plen, j->st.replayed == 0, &skipped);
        if (rc == KCTL_ERR_NOMEM) return rc;
        if (rc != KCTL_OK && off == KCTL__JNL_HDR && rc == KCTL_ERR_PROTO && kctl__jnl_gap(f + KCTL__JNL_FRAME, plen, ms->rev))
            return KCTL_ERR_PROTO; /* its first record does not follow the snapshot: a snapshot is missing */
        if (rc != KCTL_OK) {
            rc = KCTL_OK;
            stop = KCTL_LOGITEM_MEMSTORE_JOURNAL_CORRUPT;
            break;
        }
        if (!skipped) j->st.replayed++;
        off += KCTL__JNL_FRAME + plen;
    }
    j->size = off < len ? off : len;
    j->st.dropped_bytes = len - j->size;
    j->st.stop_item = stop;
    if (stop) kctl__log(&j->logger, 1, (kctl_log_item)stop);
    return KCTL_OK;
}

/* Load the store's files: a first start when nothing is at the path; IO
   when something is there that cannot be read (never taken for a first
   start: the next save would replace it); PROTO when the snapshot is not
   a whole store or the journal no journal. Then the journal's records
   past the snapshot are replayed. Without files (KCTL_NO_FILES) a path
   is INVALID_ARG. */
static int kctl__ms_load(kctl_memstore *ms) {
#ifdef KCTL_NO_FILES
    (void)ms;
    return KCTL_ERR_INVALID_ARG;
#else
    kctl__jnl *j = &ms->jnl;
    char *buf = NULL, *target = NULL;
    size_t len = 0, tl;
    int rc = kctl__jnl_read_all(ms, ms->path, &buf, &len);
    if (rc == KCTL_OK) {
        rc = kctl__ms_load_buf(ms, buf, len);
        j->snap_bytes = len;
        j->have_snap = true;
    } else if (rc == KCTL_ERR_NOT_FOUND) {
        rc = KCTL_OK; /* a first start, or a journal without a snapshot yet */
    }
    kctl__free(&ms->allocator, buf);
    buf = NULL;
    if (rc != KCTL_OK) return rc;
    /* the journal beside the file the path names */
    if ((rc = kctl__jnl_target(ms, ms->path, &target)) != KCTL_OK) return rc;
    tl = kctl__strlen(target);
    j->jpath = (char *)kctl__alloc(&ms->allocator, tl + 9);
    if (j->jpath) {
        kctl__memcpy(j->jpath, target, tl);
        kctl__memcpy(j->jpath + tl, ".journal", 9);
    }
    kctl__free(&ms->allocator, target);
    if (!j->jpath) return KCTL_ERR_NOMEM;
    rc = kctl__jnl_read_all(ms, j->jpath, &buf, &len);
    if (rc == KCTL_ERR_NOT_FOUND) return KCTL_OK; /* none yet */
    if (rc == KCTL_OK) rc = kctl__jnl_replay(ms, buf, len);
    if (rc == KCTL_OK && (rc = kctl__ms_load_unique(ms)) != KCTL_OK) kctl__ms_unload(ms);
    kctl__free(&ms->allocator, buf);
    return rc;
#endif
}

KCTL_API int kctl_memstore_compact(kctl_memstore *ms, uint64_t rev) {
    if (!ms) return KCTL_ERR_INVALID_ARG;
    kctl__mutex_lock(&ms->mu);
    if (rev > ms->rev) rev = ms->rev;
    while (ms->count && ms->ring[ms->first].rev <= rev) {
        kctl__ms_free_event(ms, &ms->ring[ms->first]);
        ms->first = (ms->first + 1) % ms->cap;
        ms->count--;
    }
    if (rev > ms->compacted) ms->compacted = rev;
    kctl__ms_batches_compacted(ms, rev);
    if (ms->waiters) kctl__cond_broadcast(&ms->cv);
    kctl__ms_wake(ms); /* watchers behind the compaction: GONE now */
    kctl__mutex_unlock(&ms->mu);
    return KCTL_OK;
}

KCTL_API int kctl_memstore_fail_next(kctl_memstore *ms, kctl_verb verb, uint32_t n, int code) {
    if (!ms || verb < KCTL_VERB_LIST || verb >= KCTL_VERB_COUNT || code >= 0) return KCTL_ERR_INVALID_ARG;
#ifdef KCTL_NO_FAULTS
    (void)n;
    return KCTL_ERR_UNSUPPORTED;
#else
    kctl__mutex_lock(&ms->mu);
    ms->fail_n[verb] = n;
    ms->fail_code[verb] = code;
    kctl__mutex_unlock(&ms->mu);
    return KCTL_OK;
#endif
}

KCTL_API void kctl_memstore_set_latency(kctl_memstore *ms, uint64_t latency_ns) {
    if (!ms) return;
    kctl__mutex_lock(&ms->mu);
    ms->latency_ns = latency_ns; /* KCTL_NO_FAULTS: kept, never waited */
    kctl__mutex_unlock(&ms->mu);
}

KCTL_API void kctl_memstore_break_watches_after(kctl_memstore *ms, uint32_t n) {
    if (!ms) return;
    kctl__mutex_lock(&ms->mu);
    ms->break_after = n; /* KCTL_NO_FAULTS: kept, never applied */
    kctl__mutex_unlock(&ms->mu);
}

#endif /* KCTL_NO_MEMSTORE */

/* -------------------------------------------------- >>reflector REFLECTOR */
enum { KCTL__RF_LIST, KCTL__RF_OPEN, KCTL__RF_WATCH };
#ifdef KCTL_NO_RESYNC /* resync_ns is always 0: the compiler drops what it guards */
#define KCTL__RF_RESYNC 0
#else
#define KCTL__RF_RESYNC 1
#endif

struct kctl_reflector {
    kctl_transport t;
    kctl_resource res;
    kctl_list_opts lo;
    kctl_fifo *fifo;
    kctl_clock clock;
    kctl_allocator allocator;
    char *strings; /* the copies the resource and selectors point into */
    uint32_t page_size;
    uint64_t resync_ns, stall_ns, b_initial, b_max, b_reset;
    uint64_t rng;
    int state;
    bool listed;
    kctl_watch *w;
    uint64_t not_before;   /* backoff: nothing before this time */
    uint64_t backoff;      /* the next delay before jitter */
    uint64_t last_backoff; /* when the last backoff began (for the reset) */
    uint64_t last_event;   /* the watch's last event or bookmark (stall) */
    uint64_t opened;       /* when the watch opened, and its events since: a clean */
    uint64_t opened_events;/* end soon after with none is a "very short watch" */
    uint64_t next_resync;  /* due time of the next resync, set when a list completes */
    kctl_wake wake;        /* registered on every watch (desc.wake) */
    kctl_logger logger;
    bool woken;            /* the open watch has it: an idle watch is not polled */
    char rv[KCTL_RV_MAX];
    kctl_reflector_stats stats;
};

KCTL_API int kctl_reflector_create(const kctl_reflector_desc *desc, kctl_reflector **out) {
    /* the strings copied: the resource's four and the two selectors, where
       the desc has them and where r keeps them */
    static const unsigned char from[6] = { offsetof(kctl_reflector_desc, resource.group), offsetof(kctl_reflector_desc, resource.version),
                                           offsetof(kctl_reflector_desc, resource.resource), offsetof(kctl_reflector_desc, resource.ns),
                                           offsetof(kctl_reflector_desc, label_selector), offsetof(kctl_reflector_desc, field_selector) };
    static const unsigned char to[6] = { offsetof(kctl_reflector, res.group), offsetof(kctl_reflector, res.version),
                                         offsetof(kctl_reflector, res.resource), offsetof(kctl_reflector, res.ns),
                                         offsetof(kctl_reflector, lo.label_selector), offsetof(kctl_reflector, lo.field_selector) };
    const kctl_reflector_desc *d;
    kctl_reflector *r;
    kctl_selector *check = NULL;
    size_t i, n, total = 0;
    char *p;
    int rc;
    if (!out) return KCTL_ERR_INVALID_ARG;
    *out = NULL;
    if (!desc || !desc->transport.vt || !desc->fifo || !desc->resource.resource || !*desc->resource.resource)
        return KCTL_ERR_INVALID_ARG;
    d = desc; /* read in place (no copy) */
    if ((!d->allocator.alloc_fn) != (!d->allocator.free_fn)) return KCTL_ERR_INVALID_ARG;
#ifdef KCTL_NO_PAGING
    if (d->page_size) return KCTL_ERR_UNSUPPORTED; /* no pages: every list is one request */
#endif
    if (!KCTL__RF_RESYNC && d->resync_ns) return KCTL_ERR_UNSUPPORTED; /* a part compiled out (COMPILE-TIME OPTIONS) */
#ifdef KCTL_NO_SELECTORS /* what the parse answers (the allocator is checked above): only empty selectors, none made */
    (void)check;
    (void)rc;
    if (!kctl__sel_empty(d->label_selector, false) || !kctl__sel_empty(d->field_selector, true)) return KCTL_ERR_UNSUPPORTED;
#else
    if ((rc = kctl_selector_parse(d->label_selector, d->field_selector, &d->allocator, &check)) != KCTL_OK) return rc;
    kctl_selector_free(check);
#endif
    for (i = 0; i < 6; i++) {
        const char *s = *(const char *const *)(const void *)((const char *)d + from[i]);
        total += (s ? kctl__strlen(s) : 0) + 1;
    }
    if (!(r = (kctl_reflector *)kctl__alloc(&d->allocator, sizeof *r))) return KCTL_ERR_NOMEM;
    memset(r, 0, sizeof *r);
    if (!(r->strings = (char *)kctl__alloc(&d->allocator, total))) {
        kctl__free(&d->allocator, r);
        return KCTL_ERR_NOMEM;
    }
    for (i = 0, p = r->strings; i < 6; i++) { /* copy every string; NULL stays NULL (r was zeroed) */
        const char *s = *(const char *const *)(const void *)((const char *)d + from[i]);
        if (!s) continue;
        n = kctl__strlen(s) + 1;
        kctl__memcpy(p, s, n);
        *(const char **)(void *)((char *)r + to[i]) = p;
        p += n;
    }
    r->t = d->transport;
    r->fifo = d->fifo;
    r->clock = d->clock.now_fn ? d->clock : kctl_clock_monotonic();
    r->allocator = d->allocator;
#ifndef KCTL_NO_PAGING
    r->page_size = d->page_size ? d->page_size : 500;
#endif
    if (KCTL__RF_RESYNC) r->resync_ns = d->resync_ns;
    r->stall_ns = d->stall_ns ? d->stall_ns : KCTL_SEC(300);
    r->b_initial = d->backoff_initial_ns ? d->backoff_initial_ns : KCTL_MS(800);
    r->b_max = d->backoff_max_ns ? d->backoff_max_ns : KCTL_SEC(30);
    r->b_reset = d->backoff_reset_ns ? d->backoff_reset_ns : KCTL_SEC(120);
    /* a seed of its own by default: devices that lost their store together
       must not retry in step (xorshift's state must not be 0) */
    r->rng = d->seed ? d->seed : (kctl__port_wall_ns() ^ (uint64_t)(uintptr_t)r) | 1u;
    r->backoff = r->b_initial;
    r->wake = d->wake;
    r->logger = d->logger;
    r->state = KCTL__RF_LIST;
    *out = r;
    return KCTL_OK;
}

KCTL_API void kctl_reflector_destroy(kctl_reflector *r) {
    if (!r) return;
    if (r->w) r->t.vt->watch_close(r->t.self, r->w);
    kctl__free(&r->allocator, r->strings);
    kctl__free(&r->allocator, r);
}

/* Wait before trying again: client-go's backoff manager (exponential,
   capped, reset after a healthy stretch), jittered by up to 100%. */
static void kctl__rf_backoff(kctl_reflector *r, uint64_t now) {
    uint64_t d, x;
    if (r->last_backoff && now - r->last_backoff >= r->b_reset) r->backoff = r->b_initial;
    d = r->backoff;
    r->backoff = r->backoff > r->b_max / 2 ? r->b_max : r->backoff * 2;
    x = r->rng; /* xorshift64 */
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    r->rng = x;
    d += kctl__mul_frac(d, x); /* + [0, d) */
    r->last_backoff = now;
    r->not_before = kctl__add_sat(now, d);
}

static void kctl__rf_close(kctl_reflector *r) {
    if (r->w) r->t.vt->watch_close(r->t.self, r->w);
    r->w = NULL;
}

/* A failed attempt: the watch closed, the state to go on in, the code
   counted in errors and kept in last_error (OK: not counted, a broken
   watch), then the backoff from now. */
static void kctl__rf_fail(kctl_reflector *r, int state, int code, uint64_t now) {
    kctl__rf_close(r);
    r->state = state;
    if (code != KCTL_OK) {
        r->stats.errors++;
        r->stats.last_error = code;
    }
    kctl__rf_backoff(r, now);
}

/* What the last list or watch gave could not all be kept (an informer's
   cache refused it: code): list again after the backoff, as after a
   failed list. */
static void kctl__rf_relist_later(kctl_reflector *r, int code) {
    kctl__rf_fail(r, KCTL__RF_LIST, code, kctl_clock_now(&r->clock));
}

/* List every page and replace the FIFO's contents. A complete list
   starts the resync period (client-go starts its resync timer after the
   list). */
static KCTL__SMALL_CALL32 int kctl__rf_list(kctl_reflector *r) {
#ifdef KCTL_NO_PAGING /* one request, its items handed on as they are */
    kctl_list_result page;
    kctl_obj *const *all;
    const char *rv = page.resource_version;
    size_t n;
    int rc = r->t.vt->list(r->t.self, &r->res, &r->lo, &page, NULL);
    if (rc != KCTL_OK) return rc;
    if (page.continue_token[0]) rc = KCTL_ERR_PROTO; /* pages nobody asked for: not the whole list */
    all = page.items.items;
    n = page.items.count;
#else
    kctl_obj **all = NULL;
    size_t n = 0, cap = 0, i;
    char cont[KCTL_CONTINUE_MAX] = "";
    char rv[KCTL_RV_MAX] = "";
    int rc = KCTL_OK;
    kctl_list_opts lo = r->lo;
    lo.limit = r->page_size;
    do {
        kctl_list_result page;
        lo.continue_token = cont;
        if ((rc = r->t.vt->list(r->t.self, &r->res, &lo, &page, NULL)) == KCTL_ERR_GONE && cont[0]) {
            /* the snapshot expired between pages: one list without pages, at
               once (client-go's pager, FullListIfExpired), not an error */
            for (i = 0; i < n; i++) kctl_obj_unref(all[i]);
            n = 0;
            rv[0] = cont[0] = '\0';
            lo.limit = 0;
            lo.continue_token = cont;
            rc = r->t.vt->list(r->t.self, &r->res, &lo, &page, NULL);
        }
        if (rc != KCTL_OK) break;
        if (!rv[0]) kctl__scopy(rv, sizeof rv, page.resource_version); /* the first page's version */
        if (n + page.items.count > cap) {
            size_t ncap = cap ? cap * 2 : 64;
            kctl_obj **na;
            while (ncap < n + page.items.count) ncap *= 2;
            if (!(na = (kctl_obj **)kctl__alloc(&r->allocator, ncap * sizeof *na))) {
                kctl_list_result_free(&page);
                rc = KCTL_ERR_NOMEM;
                break;
            }
            if (n) kctl__memcpy(na, all, n * sizeof *na);
            kctl__free(&r->allocator, all);
            all = na;
            cap = ncap;
        }
        for (i = 0; i < page.items.count; i++) all[n++] = kctl_obj_ref(page.items.items[i]);
        kctl__scopy(cont, sizeof cont, page.continue_token);
        kctl_list_result_free(&page);
    } while (cont[0]);
#endif
    if (rc == KCTL_OK) rc = kctl_fifo_replace(r->fifo, all, n);
    if (rc == KCTL_OK) {
        kctl__scopy(r->rv, sizeof r->rv, rv);
        if (r->listed) r->stats.relists++;
        r->stats.lists++;
        r->listed = true;
        if (KCTL__RF_RESYNC && r->resync_ns) r->next_resync = kctl__add_sat(kctl_clock_now(&r->clock), r->resync_ns);
    }
#ifdef KCTL_NO_PAGING
    kctl_list_result_free(&page);
#else
    for (i = 0; i < n; i++) kctl_obj_unref(all[i]);
    kctl__free(&r->allocator, all);
#endif
    return rc;
}

/* Whether a watch was refused because the store is older than from_rv
   (apimachinery's isTooLargeResourceVersionError): TIMEOUT with the
   cause ResourceVersionTooLarge, or, as API servers before the cause
   said it, with "Too large resource version" in the message. st (the
   call's, filled by kctl__rf_status) is let go either way: every call's
   status ends here. */
static bool kctl__rf_store_behind(int rc, kctl_api_status *st) {
    size_t i;
    bool behind = false;
    if (rc == KCTL_ERR_TIMEOUT) {
        for (i = 0; i < st->cause_count; i++)
            if (st->causes[i].reason && kctl__strcmp(st->causes[i].reason, "ResourceVersionTooLarge") == 0) behind = true;
        if (st->message) { /* strstr without it (LIBC); a literal, not an array: the linker keeps one copy with the memstore's */
#define KCTL__RF_TOO_LARGE "Too large resource version"
            const char *p;
            for (p = st->message; *p && !behind; p++)
                behind = kctl__strncmp(p, KCTL__RF_TOO_LARGE, sizeof KCTL__RF_TOO_LARGE - 1) == 0;
#undef KCTL__RF_TOO_LARGE
        }
    }
    if (st->mem_) kctl_api_status_clear(st); /* (no call per event: a watch's events come with none) */
    return behind;
}

/* An empty status for a call of r's transport, on r's allocator. */
static void kctl__rf_status(const kctl_reflector *r, kctl_api_status *st) {
    memset(st, 0, sizeof *st);
    st->allocator = r->allocator;
}

/* A store found behind the last version seen: counted and told, and the
   next attempt is a list. */
static KCTL__SMALL_CALL32 void kctl__rf_behind(kctl_reflector *r) {
    r->stats.store_behind++;
    kctl__log(&r->logger, KCTL_LOG_WARN, KCTL_LOGITEM_REFLECTOR_STORE_BEHIND);
    r->state = KCTL__RF_LIST;
}

/* Open the watch from r->rv: the transport's result. A store found
   behind that version (it went back in time) is counted and told, and
   the next attempt is a list (from "", the store's present) rather than
   the same watch again, which would be refused forever. */
static int kctl__rf_open(kctl_reflector *r) {
    kctl_api_status st;
    int rc;
    kctl__rf_status(r, &st);
    rc = r->t.vt->watch_open(r->t.self, &r->res, &r->lo, r->rv, &r->w, &st);
    if (rc != KCTL_OK) r->w = NULL;
    if (kctl__rf_store_behind(rc, &st) && r->rv[0]) kctl__rf_behind(r);
    return rc;
}

KCTL_API int kctl_reflector_step(kctl_reflector *r, uint64_t wait_ns, uint64_t *next_ns) {
    uint64_t now, next;
    int rc, budget = 256; /* events per step: bounded work */
    bool got = false;     /* events since now was read: the last event's time is owed (read once a run, not per event) */
    if (!r) return KCTL_ERR_INVALID_ARG;
    now = kctl_clock_now(&r->clock);
    if (KCTL__RF_RESYNC && r->resync_ns && r->listed && now >= r->next_resync) { /* due resync_ns after the list or the last resync */
        if (kctl_fifo_resync(r->fifo) == KCTL_ERR_SHUTDOWN) return KCTL_ERR_SHUTDOWN;
        r->next_resync = kctl__add_sat(now, r->resync_ns);
        wait_ns = 0;
    }
    while (now >= r->not_before && budget > 0) {
        kctl_event ev;
        kctl_api_status wst; /* for a refusal that comes as the stream's first
                                event (an API server's watch cache: an ERROR event) */
        bool behind;
        if (r->state == KCTL__RF_LIST) {
            rc = kctl__rf_list(r);
            now = kctl_clock_now(&r->clock); /* a list may take long: its backoff counts from its end */
            if (rc == KCTL_ERR_SHUTDOWN) return rc;
            if (rc != KCTL_OK) {
                kctl__rf_fail(r, KCTL__RF_LIST, rc, now);
                break;
            }
            r->stats.last_error = KCTL_OK;
            r->state = KCTL__RF_OPEN;
            wait_ns = 0; /* the listed objects wait in the FIFO: come back to pop them */
        }
        if (r->state == KCTL__RF_OPEN) {
            rc = kctl__rf_open(r); /* a store behind r->rv: state LIST, after the backoff below */
            now = kctl_clock_now(&r->clock); /* an open may take long (an endpoint's timeout, then the next):
                                                its backoff and the new watch's stall_ns count from its end */
            if (rc == KCTL_ERR_GONE) {
                r->state = KCTL__RF_LIST;
                continue;
            }
            if (rc != KCTL_OK) {
                kctl__rf_fail(r, r->state, rc, now);
                break;
            }
            r->stats.last_error = KCTL_OK;
            r->state = KCTL__RF_WATCH;
            r->last_event = r->opened = now;
            r->opened_events = 0;
            /* a wake-up for what arrives from now on; what came before it
               is read just below, in this step */
            r->woken = r->wake.fn && kctl_transport_watch_notify(&r->t, r->w, &r->wake) == KCTL_OK;
        }
        /* watching */
        kctl__rf_status(r, &wst);
        rc = r->t.vt->watch_next(r->t.self, r->w, wait_ns, &ev, &wst);
#if KCTL_SMALL
        behind = kctl__rf_store_behind(rc, &wst);
#else /* an event comes with no status: no call */
        behind = (rc != KCTL_OK || wst.mem_) && kctl__rf_store_behind(rc, &wst);
#endif
        wait_ns = 0; /* wait once per step at most */
        if (rc == KCTL_OK) {
            budget--;
            r->opened_events++;
            got = true;
#if KCTL_SMALL
            if (ev.resource_version[0]) kctl__scopy(r->rv, sizeof r->rv, ev.resource_version);
#else
            if (ev.resource_version[0]) { /* the same size: the string and what follows it, no printf per event */
                kctl__memcpy(r->rv, ev.resource_version, sizeof r->rv);
                r->rv[sizeof r->rv - 1] = '\0';
            }
#endif
            /* an event's type is its delta's (ADDED, MODIFIED: UPDATED, DELETED);
               a bookmark only moves the version */
            {
                static const unsigned char count_at[4] = { offsetof(kctl_reflector_stats, added), offsetof(kctl_reflector_stats, modified),
                                                           offsetof(kctl_reflector_stats, deleted), offsetof(kctl_reflector_stats, bookmarks) };
                unsigned t = (unsigned)ev.type - KCTL_EVENT_ADDED; /* the counter by type: one increment, not one each */
                if (t > KCTL_EVENT_DELETED - KCTL_EVENT_ADDED) {
                    t = 3;
                    ev.type = 0;
                }
                (*(uint64_t *)(void *)((char *)&r->stats + count_at[t]))++;
            }
            rc = ev.type ? kctl__fifo_write(r->fifo, ev.obj, ev.type) : KCTL_OK;
            kctl_event_clear(&ev);
            if (rc == KCTL_ERR_SHUTDOWN) return rc;
            if (rc != KCTL_OK) { /* a delta was lost (out of memory): list again, later (its backoff from now, not the step's start) */
                r->last_event = now = kctl_clock_now(&r->clock);
                got = false;
                kctl__rf_fail(r, KCTL__RF_LIST, rc, now);
                break;
            }
            continue;
        }
        now = kctl_clock_now(&r->clock);
        if (got) r->last_event = now; /* (the run of events just ended) */
        got = false;
        if (rc == KCTL_ERR_AGAIN && now - r->last_event < r->stall_ns) break; /* idle */
        kctl__rf_close(r); /* stalled, ended or broken */
        if (rc == KCTL_ERR_GONE) {
            r->state = KCTL__RF_LIST;
            continue;
        }
        if (behind) { /* as at the open: a list, after a backoff */
            kctl__rf_behind(r);
            kctl__rf_fail(r, KCTL__RF_LIST, rc, now);
            break;
        }
        r->stats.watch_restarts++;
        r->state = KCTL__RF_OPEN; /* from the last version seen */
        if (rc == KCTL_ERR_AGAIN) continue; /* stalled: at once */
        if (rc == KCTL_ERR_CLOSED && (r->opened_events || now - r->opened >= KCTL_SEC(1))) {
            budget--; /* the server's timeout: at once */
            continue;
        }
        /* broken, or a very short watch (CLOSED) as a broken one: after a
           backoff; neither counts as an error */
        kctl__rf_fail(r, KCTL__RF_OPEN, rc == KCTL_ERR_CLOSED || rc == KCTL_ERR_IO ? KCTL_OK : rc, now);
        break;
    }
    if (got) r->last_event = now = kctl_clock_now(&r->clock); /* the budget ended a run of events */
    /* when to come back: now with work left; the backoff's end; for an idle
       watch, its stall deadline, or its next poll when nothing wakes us */
    if (r->not_before > now) next = r->not_before;
    else if (budget <= 0 || r->state != KCTL__RF_WATCH) next = now;
    else next = r->woken ? UINT64_MAX : kctl__add_sat(now, KCTL_REFLECTOR_POLL_NS);
    if (r->state == KCTL__RF_WATCH && kctl__add_sat(r->last_event, r->stall_ns) < next) next = kctl__add_sat(r->last_event, r->stall_ns);
    if (KCTL__RF_RESYNC && r->resync_ns && r->next_resync && r->next_resync < next) next = r->next_resync;
    if (next_ns) *next_ns = next;
    return KCTL_OK;
}

/* Start from a checkpoint (objs at version rv) as from a list: the FIFO
   replaced, no request made, then a watch from rv. */
#ifndef KCTL_NO_CHECKPOINT /* only a checkpoint resumes */
static int kctl__rf_resume(kctl_reflector *r, kctl_obj **objs, size_t n, const char *rv) {
    int rc = kctl_fifo_replace(r->fifo, objs, n);
    if (rc != KCTL_OK) return rc;
    kctl__scopy(r->rv, sizeof r->rv, rv);
    r->listed = true;
    r->state = KCTL__RF_OPEN;
    if (KCTL__RF_RESYNC && r->resync_ns) r->next_resync = kctl__add_sat(kctl_clock_now(&r->clock), r->resync_ns);
    return KCTL_OK;
}
#endif

KCTL_API bool kctl_reflector_listed(const kctl_reflector *r) { return r && r->listed; }

KCTL_API void kctl_reflector_read_stats(const kctl_reflector *r, kctl_reflector_stats *out) {
    if (!out) return;
    memset(out, 0, sizeof *out);
    if (!r) return;
    *out = r->stats;
    kctl__scopy(out->last_rv, sizeof out->last_rv, r->rv);
}

/* ---------------------------------------------------- >>informer INFORMER */
#ifdef KCTL_NO_TRANSFORM /* no transform: the compiler drops its calls */
#define KCTL__INF_TRANSFORM 0
#else
#define KCTL__INF_TRANSFORM 1
#endif
/* Batches (threads, not KCTL_SMALL): a step tells its handlers a run of
   events, then calls each handler's flush; the controller holds the keys
   and adds a run of them in one hold of its queue's lock, with one run of
   wake-ups (kctl__ctl_on_primary, kctl__queue_add_objs). Only an informer
   whose handlers are all kctl's own batches. */
#if !KCTL_SMALL && !defined(KCTL_NO_THREADS)
#define KCTL__INF_BATCH 1
#else
#define KCTL__INF_BATCH 0
#endif
/* In a batch, the cache takes a run of adds and updates (up to
   KCTL__INF_DEFER) in one hold of its write lock, and the handlers are
   told of them once it is let go, in order: the lock's hand-off (two
   workers' reader counters, the writer's flag) is paid once a run, not
   once an event, and no handler runs while the cache is locked. A
   handler may so find the cache ahead of the event it is told, as
   client-go's listeners, which run apart from the cache's updates, may.
   An add or update told later: */
#define KCTL__INF_DEFER 32
typedef struct kctl__infdefer {
    kctl_obj *old, *obj;   /* references held until told */
    bool sync, from_list;
} kctl__infdefer;

/* A handler as the informer keeps it. */
typedef struct kctl__infh {
    kctl_handler h;
    bool replay; /* added after start: the current contents first, as adds */
#if KCTL__INF_BATCH
    void (*flush)(void *user_data); /* (kctl's own handlers) the end of a batch, or NULL */
#endif
} kctl__infh;

struct kctl_informer {
    kctl_allocator allocator;
    kctl_indexer *ix;
    kctl_fifo *fifo;
    kctl_reflector *r;
    kctl__mutex mu; /* the handler list, the flags and the stats copy */
    kctl__cond cv;  /* synced, out of memory before it, stop */
    /* The handlers (under mu). add_handler grows the list and, with it, the
       room for the step's copy (spare), so a step never allocates. */
    kctl__infh *handlers;
    uint32_t nhandlers, cap;
#ifndef KCTL_NO_THREADS
    bool changed;      /* handlers added since the step took its copy */
    kctl__infh *spare; /* room for cap handlers, for the step to take */
    /* The step's copy, which handlers run from: the stepping thread's own. */
    kctl__infh *run;
#endif
    uint32_t nrun;     /* without threads: the handlers the step runs, the first nrun of the list */
    int cache_err;     /* the cache took the last delta given (OK) or not (NOMEM): stepping thread */
    bool refused;      /* the cache refused an object this step (FULL): relist later */
    uint64_t cache_full, transform_errors;
    kctl_transform_fn transform;
    void *transform_user_data;
    kctl_logger logger;
    bool synced, running, stop;
    kctl_reflector_stats stats;
    struct kctl__ckpt *ckpt; /* the checkpoint (CHECKPOINT), or NULL */
    bool from_list;          /* the event being told comes from a list or a resync (stepping thread) */
    bool batching;           /* a step is telling its handlers a batch, flushed at its end (stepping thread) */
#if KCTL__INF_BATCH
    bool held;               /* the step holds the cache's write lock (stepping thread) */
    uint32_t ndefer;         /* adds and updates not yet told (stepping thread) */
    kctl__infdefer defer[KCTL__INF_DEFER];
#endif
#ifndef KCTL_NO_THREADS
    kctl__thread thread;
#endif
};

/* The handlers a step runs: its copy; without threads, the list itself
   (a handler that adds one may move it: always read it through inf). */
#ifndef KCTL_NO_THREADS
#define KCTL__INF_RUN(inf) ((inf)->run)
#else
#define KCTL__INF_RUN(inf) ((inf)->handlers)
#endif

struct kctl__ckpt;
static void kctl__ckpt_tick(kctl_informer *inf);
static void kctl__ckpt_on_stop(kctl_informer *inf);
static void kctl__ckpt_free(kctl_informer *inf);
KCTL_API int kctl_transform_drop_managed_fields(kctl_obj *obj, kctl_obj **out, void *user_data) {
    const kctl_obj_opts *opts = (const kctl_obj_opts *)user_data;
    kctl_json_value v;
    kctl__jdoc d;
    kctl_jw w;
    const char *doc, *text, *raw;
    size_t dlen, n, rn;
    uint32_t k, i, md, mk;
    int rc;
    if (!out) return KCTL_ERR_INVALID_ARG;
    *out = NULL;
    if (!obj) return KCTL_ERR_INVALID_ARG;
    if (kctl_obj_get(obj, "metadata.managedFields", &v) != KCTL_OK) { /* nothing to drop */
        *out = kctl_obj_ref(obj);
        return KCTL_OK;
    }
    doc = kctl_obj_json(obj, &dlen);
    if ((rc = kctl__jdoc_parse(&d, doc, dlen, opts ? &opts->allocator : NULL, NULL)) != KCTL_OK) return rc;
    if (kctl_json_type_of(&d.j, 0) != KCTL_JSON_OBJECT) {
        kctl__jdoc_free(&d);
        return KCTL_ERR_PROTO;
    }
    md = kctl_json_member(&d.j, 0, "metadata");
    kctl_jw_init_growable(&w, opts ? &opts->allocator : NULL);
    kctl_jw_object_begin(&w);
    for (k = 0, i = 1; k < d.j.toks[0].size; k++, i += 1 + d.j.toks[i + 1].skip) {
        kctl_json_raw(&d.j, i, &raw, &rn);
        kctl__jw_key_raw(&w, raw, rn);
        kctl__jw_put(&w, ":", 1);
        if (i + 1 != md) {
            kctl_jw_value(&w, &d.j, i + 1);
            continue;
        }
        kctl_jw_object_begin(&w); /* metadata, but for managedFields */
        for (n = 0, mk = md + 1; n < d.j.toks[md].size; n++, mk += 1 + d.j.toks[mk + 1].skip) {
            if (kctl_json_string_eq(&d.j, mk, "managedFields")) continue;
            kctl_json_raw(&d.j, mk, &raw, &rn);
            kctl__jw_key_raw(&w, raw, rn);
            kctl__jw_put(&w, ":", 1);
            kctl_jw_value(&w, &d.j, mk + 1);
        }
        kctl_jw_object_end(&w);
    }
    kctl_jw_object_end(&w);
    if ((rc = kctl_jw_finish(&w, &text, &n)) == KCTL_OK) rc = kctl_obj_parse(text, n, opts, out);
    kctl_jw_free(&w);
    kctl__jdoc_free(&d);
    return rc;
}

/* kctl_informer_desc and kctl_reflector_desc open with the same fields up
   to the clock and the FIFO: create copies them in one. */
typedef char kctl__inf_rd_prefix[offsetof(kctl_informer_desc, clock) == offsetof(kctl_reflector_desc, fifo) &&
                                 offsetof(kctl_informer_desc, field_selector) == offsetof(kctl_reflector_desc, field_selector) ? 1 : -1];

KCTL_API int kctl_informer_create(const kctl_informer_desc *desc, kctl_informer **out) {
    kctl_indexer_desc xd;
    kctl_fifo_desc fd;
    kctl_reflector_desc rd;
    kctl_informer *inf;
    int rc;
    if (!out) return KCTL_ERR_INVALID_ARG;
    *out = NULL;
    if (!desc || (!desc->allocator.alloc_fn) != (!desc->allocator.free_fn)) return KCTL_ERR_INVALID_ARG;
    if (!KCTL__INF_TRANSFORM && desc->transform) return KCTL_ERR_UNSUPPORTED; /* compiled out (COMPILE-TIME OPTIONS) */
    if (!(inf = (kctl_informer *)kctl__alloc(&desc->allocator, sizeof *inf))) return KCTL_ERR_NOMEM;
    memset(inf, 0, sizeof *inf);
    inf->allocator = desc->allocator;
    memset(&xd, 0, sizeof xd);
    xd.allocator = desc->allocator;
    xd.max_objects = desc->max_objects;
    xd.max_bytes = desc->max_bytes;
    if (KCTL__INF_TRANSFORM) {
        inf->transform = desc->transform;
        inf->transform_user_data = desc->transform_user_data;
    }
    inf->logger = desc->logger;
    memset(&fd, 0, sizeof fd);
    fd.allocator = desc->allocator;
    memset(&rd, 0, sizeof rd);
    kctl__memcpy(&rd, desc, offsetof(kctl_reflector_desc, fifo)); /* transport, resource, the selectors: the same run in both */
    rd.clock = desc->clock;
    rd.resync_ns = desc->resync_ns;
    rd.page_size = desc->page_size;
    rd.stall_ns = desc->stall_ns;
    rd.seed = desc->seed;
    rd.allocator = desc->allocator;
    rd.wake = desc->wake;
    rd.logger = desc->logger;
    if ((rc = kctl_indexer_create(&xd, &inf->ix)) != KCTL_OK) goto fail;
    fd.known = inf->ix;
    if ((rc = kctl_fifo_create(&fd, &inf->fifo)) != KCTL_OK) goto fail;
    rd.fifo = inf->fifo;
    if ((rc = kctl_reflector_create(&rd, &inf->r)) != KCTL_OK) goto fail;
    if (kctl__mutex_init(&inf->mu) != KCTL_OK) { rc = KCTL_ERR_NOMEM; goto fail; }
    if (kctl__cond_init(&inf->cv) != KCTL_OK) {
        kctl__mutex_deinit(&inf->mu);
        rc = KCTL_ERR_NOMEM;
        goto fail;
    }
    *out = inf;
    return KCTL_OK;
fail:
    kctl_reflector_destroy(inf->r);
    kctl_fifo_destroy(inf->fifo);
    kctl_indexer_destroy(inf->ix);
    kctl__free(&inf->allocator, inf);
    return rc;
}

KCTL_API void kctl_informer_destroy(kctl_informer *inf) {
    if (!inf) return;
    kctl_informer_stop(inf);
    kctl__ckpt_free(inf);
    kctl_reflector_destroy(inf->r);
    kctl_fifo_destroy(inf->fifo);
    kctl_indexer_destroy(inf->ix);
    kctl__cond_deinit(&inf->cv);
    kctl__mutex_deinit(&inf->mu);
    kctl__free(&inf->allocator, inf->handlers);
#ifndef KCTL_NO_THREADS
    kctl__free(&inf->allocator, inf->spare);
    kctl__free(&inf->allocator, inf->run);
#endif
    kctl__free(&inf->allocator, inf);
}

/* kctl_informer_add_handler, with the handler's flush where batches are
   compiled in (KCTL__INF_BATCH; without, the call is add_handler's). */
#if KCTL__INF_BATCH
static int kctl__inf_add_handler(kctl_informer *inf, const kctl_handler *h, void (*flush)(void *)) {
#else
#define kctl__inf_add_handler(inf, h, flush) kctl_informer_add_handler((inf), (h))
KCTL_API int kctl_informer_add_handler(kctl_informer *inf, const kctl_handler *h) {
#endif
    int rc = KCTL_OK;
    if (!inf || !h) return KCTL_ERR_INVALID_ARG;
    kctl__mutex_lock(&inf->mu);
    if (inf->nhandlers == inf->cap) { /* grow the list and the room for the step's copy together */
        uint32_t cap = inf->cap ? inf->cap * 2 : 4;
        kctl__infh *list = NULL, *room = NULL;
        size_t bytes = (size_t)cap * sizeof *list;
        if (cap > inf->cap && bytes / sizeof *list == cap) {
            list = (kctl__infh *)kctl__alloc(&inf->allocator, bytes);
#ifndef KCTL_NO_THREADS
            room = (kctl__infh *)kctl__alloc(&inf->allocator, bytes);
#else
            room = list; /* no copy: the step runs the list */
#endif
        }
        if (!list || !room) {
            kctl__free(&inf->allocator, list);
#ifndef KCTL_NO_THREADS
            kctl__free(&inf->allocator, room);
#endif
            rc = KCTL_ERR_NOMEM;
        } else {
            if (inf->nhandlers) kctl__memcpy(list, inf->handlers, inf->nhandlers * sizeof *list);
            kctl__free(&inf->allocator, inf->handlers);
            inf->handlers = list;
#ifndef KCTL_NO_THREADS
            kctl__free(&inf->allocator, inf->spare); /* an older room the step never took */
            inf->spare = room;
#endif
            inf->cap = cap;
        }
    }
    if (rc == KCTL_OK) {
        inf->handlers[inf->nhandlers].h = *h;
        inf->handlers[inf->nhandlers].replay = inf->running || inf->stats.lists > 0;
#if KCTL__INF_BATCH
        inf->handlers[inf->nhandlers].flush = flush;
#endif
        inf->nhandlers++;
#ifndef KCTL_NO_THREADS
        inf->changed = true;
#endif
    }
    kctl__mutex_unlock(&inf->mu);
    return rc;
}

#if KCTL__INF_BATCH
KCTL_API int kctl_informer_add_handler(kctl_informer *inf, const kctl_handler *h) { return kctl__inf_add_handler(inf, h, NULL); }
#endif

KCTL_API kctl_indexer *kctl_informer_indexer(kctl_informer *inf) { return inf ? inf->ix : NULL; }

KCTL_API bool kctl_informer_event_from_list(kctl_informer *inf) { return inf && inf->from_list; }

/* Whether inf resyncs (its handlers then take syncs as client-go's take
   the informer's resync period). */
static bool kctl__inf_resyncs(const kctl_informer *inf) { return KCTL__RF_RESYNC && inf->r->resync_ns != 0; }

typedef struct kctl__infctx {
    kctl_informer *inf;
    bool put_back; /* a key went back to the FIFO: stop popping until the next step */
} kctl__infctx;

/* client-go's OnUpdate: an update that keeps the resourceVersion is a
   sync (a resync, or a relist that found the object as cached). Without
   a resourceVersion nothing tells them apart: a change. */
static bool kctl__inf_is_sync(const kctl_obj *old_obj, const kctl_obj *new_obj) {
    const char *a = kctl_obj_resource_version(old_obj), *b = kctl_obj_resource_version(new_obj);
    return *a && kctl__strcmp(a, b) == 0;
}

/* Tell the handlers of an add (old NULL) or an update; a sync only to
   those that ask for syncs (distribute(obj, isSync)). */
static void kctl__inf_tell_one(kctl_informer *inf, kctl_obj *old, kctl_obj *obj, bool sync, bool from_list) {
    uint32_t k;
    inf->from_list = from_list;
    for (k = 0; k < inf->nrun; k++) {
        const kctl_handler *h = &KCTL__INF_RUN(inf)[k].h;
        if (old && h->on_update && (!sync || h->resync)) h->on_update(old, obj, h->user_data);
        else if (!old && h->on_add) h->on_add(obj, h->user_data);
    }
    inf->from_list = false;
}

#if KCTL__INF_BATCH
/* The cache's write lock let go (if the step holds it), then the
   deferred adds and updates told, in order. */
static void kctl__inf_tell(kctl_informer *inf) {
    uint32_t i;
    if (inf->held) {
        kctl__indexer_release(inf->ix);
        inf->held = false;
    }
    for (i = 0; i < inf->ndefer; i++) {
        kctl__infdefer *f = &inf->defer[i];
        kctl__inf_tell_one(inf, f->old, f->obj, f->sync, f->from_list);
        kctl_obj_unref(f->obj);
        kctl_obj_unref(f->old);
    }
    inf->ndefer = 0;
}
#endif

/* client-go's HandleDeltas: the cache first, then the handlers (in a
   batch, a run of adds and updates at once: kctl__infdefer). */
static int kctl__inf_process(const char *key, const kctl_delta *d, size_t n, void *user_data) {
    kctl__infctx *c = (kctl__infctx *)user_data;
    kctl_informer *inf = c->inf;
    size_t i;
    uint32_t k;
#if KCTL__INF_BATCH
    bool held = false; /* this delta goes to the cache under the step's hold */
#endif
#if !KCTL_SMALL
    /* The next key's slots in the cache start loading while this one is
       processed: with a backlog the cache's tables are cold, and their
       misses were the largest costs of the informer's thread, the
       pipeline's bottleneck (the pipeline alone: 7-10% more events/s
       for the cache's table, 3-5% more for the member set). The FIFO's
       lock is held (kctl__fifo_pop calls this). */
    if (inf->fifo->head) kctl__ix_prefetch(inf->ix, inf->fifo->head->node.hash);
#endif
    for (i = 0; i < n; i++) {
        /* A deletion looks the cached object up first; an add or update
           gets it from the cache's replace, in one trip (below). */
        kctl_obj *old = NULL, *obj = d[i].obj, *t = NULL;
        int rc;
#if KCTL__INF_BATCH
        held = inf->batching && d[i].type != KCTL_DELTA_DELETED && (!KCTL__INF_TRANSFORM || !inf->transform) && obj &&
               obj->node.key && kctl__strcmp(obj->node.key, key) == 0;
        if (!held && (inf->held || inf->ndefer)) kctl__inf_tell(inf); /* the cache's own calls, and the order told */
#endif
        if (d[i].type == KCTL_DELTA_DELETED) old = kctl_indexer_get(inf->ix, key);
        if (KCTL__INF_TRANSFORM && obj && inf->transform) { /* what the cache and the handlers get */
            rc = inf->transform(obj, &t, inf->transform_user_data);
            if (rc == KCTL_OK && !t) rc = KCTL_ERR_INVALID_ARG;
            if (rc == KCTL_ERR_NOMEM) { /* as the cache's NOMEM: this key and the rest later */
                kctl_obj_unref(old);
                inf->cache_err = rc;
                c->put_back = true;
                return KCTL_ERR_AGAIN;
            }
            if (rc != KCTL_OK) {
                kctl_obj_unref(t);
                t = NULL;
                inf->transform_errors++;
                kctl__log(&inf->logger, KCTL_LOG_ERROR, KCTL_LOGITEM_INFORMER_TRANSFORM_FAILED);
                if (d[i].type != KCTL_DELTA_DELETED) { /* dropped, as an undecodable object */
                    kctl_obj_unref(old);
                    continue;
                }
            } else {
                obj = t;
            }
        }
        if (d[i].type == KCTL_DELTA_DELETED) {
            kctl_obj *last = obj ? obj : old;
            if (old) kctl_indexer_delete(inf->ix, key);
            inf->from_list = d[i].final_state_unknown; /* found by a relist */
            for (k = 0; k < inf->nrun; k++) {
                const kctl_handler *h = &KCTL__INF_RUN(inf)[k].h;
                if (h->on_delete) h->on_delete(key, last, d[i].final_state_unknown, h->user_data);
            }
            inf->from_list = false;
        } else {
            bool sync;
#if KCTL__INF_BATCH
            if (held) {
                if (!inf->held) {
                    kctl__indexer_hold(inf->ix);
                    inf->held = true;
                }
                rc = kctl__indexer_put_old(inf->ix, obj, &old, true);
            } else
#endif
#if !KCTL_SMALL /* one trip to the cache (small builds: the two calls) */
            if (obj && obj->node.key && kctl__strcmp(obj->node.key, key) == 0) {
                rc = kctl__indexer_put_old(inf->ix, obj, &old, false);
            } else
#endif
            { /* no object, or a transform that changed its key: as two calls */
                old = kctl_indexer_get(inf->ix, key);
                rc = kctl_indexer_add(inf->ix, obj);
            }
            if (rc != KCTL_OK) { /* keep the rest for later */
                kctl_obj_unref(old);
                kctl_obj_unref(t);
                if (rc == KCTL_ERR_FULL) { /* not cached, not told: the next relist offers it again */
                    inf->cache_full++;
                    inf->refused = true;
                    kctl__log(&inf->logger, KCTL_LOG_WARN, KCTL_LOGITEM_INFORMER_CACHE_FULL);
                    continue;
                }
                if (rc != KCTL_ERR_NOMEM) return rc;
                inf->cache_err = rc;
                c->put_back = true;
                return KCTL_ERR_AGAIN;
            }
            sync = old && kctl__inf_is_sync(old, obj);
#if KCTL__INF_BATCH
            if (held) { /* told once the run is in: the references go with it */
                kctl__infdefer *f = &inf->defer[inf->ndefer++];
                f->old = old;
                f->obj = kctl_obj_ref(obj);
                f->sync = sync;
                f->from_list = d[i].type == KCTL_DELTA_REPLACED || d[i].type == KCTL_DELTA_SYNC;
                if (inf->ndefer == KCTL__INF_DEFER) kctl__inf_tell(inf);
                continue;
            }
#endif
            kctl__inf_tell_one(inf, old, obj, sync, d[i].type == KCTL_DELTA_REPLACED || d[i].type == KCTL_DELTA_SYNC); /* a list's, a resync's */
        }
        kctl_obj_unref(t);
        kctl_obj_unref(old);
    }
    inf->cache_err = KCTL_OK;
    return KCTL_OK;
}

/* The reflector's counters and the cache's: what read_stats gives (with
   threads, the copy each step makes; without, read when asked: nothing
   changes between steps). */
static void kctl__inf_stats(kctl_informer *inf, kctl_reflector_stats *out) {
    kctl_reflector_read_stats(inf->r, out);
    out->cache_full = inf->cache_full;
    out->transform_errors = inf->transform_errors;
    if (inf->cache_err) out->last_error = inf->cache_err;
}

#ifdef KCTL_NO_THREADS
/* A late handler's add of one cached object (kctl__ix_each's callback):
   without threads nothing writes the cache while its handlers run (they
   only enqueue keys), so the walk needs no copy of the contents. The
   handler is read through inf each time: an add_handler from a handler
   may move the list. */
typedef struct kctl__infreplay {
    kctl_informer *inf;
    uint32_t k;
} kctl__infreplay;

static int kctl__inf_replay(kctl_obj *obj, void *ctx) {
    const kctl__infreplay *p = (const kctl__infreplay *)ctx;
    const kctl_handler *h = &KCTL__INF_RUN(p->inf)[p->k].h;
    h->on_add(obj, h->user_data);
    return KCTL_OK;
}
#endif

KCTL_API int kctl_informer_step(kctl_informer *inf, uint64_t wait_ns, uint64_t *next_ns) {
    kctl__infctx c;
    uint32_t k;
    int rc, pops = 0;
    if (!inf) return KCTL_ERR_INVALID_ARG;
    rc = kctl_reflector_step(inf->r, wait_ns, next_ns);
    if (rc != KCTL_OK) return rc;
    memset(&c, 0, sizeof c);
    c.inf = inf;
#ifndef KCTL_NO_THREADS
    kctl__mutex_lock(&inf->mu);
    if (inf->changed) { /* handlers were added: take a new copy (never allocates) */
        if (inf->spare) {
            kctl__free(&inf->allocator, inf->run);
            inf->run = inf->spare;
            inf->spare = NULL;
        }
        kctl__memcpy(inf->run, inf->handlers, inf->nhandlers * sizeof *inf->run);
        for (k = 0; k < inf->nhandlers; k++) inf->handlers[k].replay = false;
        inf->nrun = inf->nhandlers;
        inf->changed = false;
    }
    kctl__mutex_unlock(&inf->mu);
#else
    inf->nrun = inf->nhandlers; /* the ones a handler adds meanwhile run from the next step */
#endif
#if KCTL__INF_BATCH
    /* until the flush after the pops (no return in between); only where
       every handler is kctl's own, whose adds are quick: a handler of the
       application's might take long while the wake-ups wait */
    inf->batching = true;
    for (k = 0; k < inf->nrun; k++)
        if (!KCTL__INF_RUN(inf)[k].flush) inf->batching = false;
#endif
    for (k = 0; k < inf->nrun; k++) { /* late handlers: what is cached, as adds */
#ifdef KCTL_NO_THREADS
        kctl__infreplay p;
        if (!KCTL__INF_RUN(inf)[k].replay) continue;
        KCTL__INF_RUN(inf)[k].replay = false;
        inf->cache_err = KCTL_OK;
        if (!KCTL__INF_RUN(inf)[k].h.on_add) continue;
        p.inf = inf;
        p.k = k;
        inf->from_list = true; /* the current contents, as a list gives them */
        (void)kctl__ix_each(inf->ix, kctl__inf_replay, &p);
        inf->from_list = false;
#else
        kctl_obj_list l;
        size_t i;
        if (!KCTL__INF_RUN(inf)[k].replay) continue;
        memset(&l, 0, sizeof l);
        if (KCTL__INF_RUN(inf)[k].h.on_add && kctl_indexer_list(inf->ix, &l) != KCTL_OK) { /* out of memory: */
            inf->cache_err = KCTL_ERR_NOMEM; /* no delta before its adds: all at the next step */
            c.put_back = true;
            break;
        }
        KCTL__INF_RUN(inf)[k].replay = false;
        inf->cache_err = KCTL_OK;
        inf->from_list = true; /* the current contents, as a list gives them */
        for (i = 0; i < l.count; i++) KCTL__INF_RUN(inf)[k].h.on_add(l.items[i], KCTL__INF_RUN(inf)[k].h.user_data);
        inf->from_list = false;
        kctl_obj_list_free(&l);
#endif
    }
    while (!c.put_back && pops++ < 100000 && (rc = kctl_fifo_try_pop(inf->fifo, kctl__inf_process, &c)) == KCTL_OK) { }
#if KCTL__INF_BATCH
    kctl__inf_tell(inf); /* the cache let go, the rest told */
    inf->batching = false; /* (set below, before the replays) */
    for (k = 0; k < inf->nrun; k++)
        if (KCTL__INF_RUN(inf)[k].flush) KCTL__INF_RUN(inf)[k].flush(KCTL__INF_RUN(inf)[k].h.user_data);
#endif
    if (inf->ckpt) kctl__ckpt_tick(inf);
    if (inf->refused) { /* the cache refused objects (FULL): list again after the backoff */
        inf->refused = false;
        kctl__rf_relist_later(inf->r, KCTL_ERR_FULL);
        if (next_ns && inf->r->not_before < *next_ns) *next_ns = inf->r->not_before; /* the step loop comes back for it */
    }
    if (next_ns && (c.put_back || inf->cache_err)) { /* a delta the cache could not take: retried, soon */
        uint64_t retry = kctl__add_sat(kctl_clock_now(&inf->r->clock), inf->r->b_initial);
        if (retry < *next_ns) *next_ns = retry;
    } else if (next_ns && rc == KCTL_OK) {
        *next_ns = kctl_clock_now(&inf->r->clock); /* deltas left: at once */
    }
    kctl__mutex_lock(&inf->mu);
#ifndef KCTL_NO_THREADS
    kctl__inf_stats(inf, &inf->stats); /* the copy other threads read */
#else
    inf->stats.lists = inf->r->stats.lists; /* what add_handler reads (the rest is read when asked) */
#endif
    if (!inf->synced && kctl_reflector_listed(inf->r) && kctl_fifo_has_synced(inf->fifo)) {
        inf->synced = true;
        kctl__cond_broadcast(&inf->cv);
    }
#ifndef KCTL_NO_THREADS
    else if (!inf->synced && inf->stats.last_error == KCTL_ERR_NOMEM) {
        kctl__cond_broadcast(&inf->cv); /* wait_for_sync reports it */
    }
#endif
    kctl__mutex_unlock(&inf->mu);
    return rc == KCTL_ERR_SHUTDOWN ? rc : KCTL_OK;
}

#ifndef KCTL_NO_THREADS
static uint64_t kctl__rf_events(const kctl_reflector *r) {
    return r->stats.added + r->stats.modified + r->stats.deleted + r->stats.bookmarks;
}

static void *kctl__inf_main(void *arg) {
    kctl_informer *inf = (kctl_informer *)arg;
    for (;;) {
        uint64_t next = 0, now, t0, seen, nap = 0;
        kctl__mutex_lock(&inf->mu);
        if (inf->stop) {
            kctl__mutex_unlock(&inf->mu);
            break;
        }
        kctl__mutex_unlock(&inf->mu);
        t0 = kctl_clock_now(&inf->r->clock);
        seen = kctl__rf_events(inf->r);
        if (kctl_informer_step(inf, KCTL_MS(100), &next) == KCTL_ERR_SHUTDOWN) break;
        now = kctl_clock_now(&inf->r->clock);
        /* The step waits for events inside watch_next; sleep here only while
           the reflector backs off, or when a transport that cannot wait
           came back at once with nothing (1 ms: no hot spin on it, and
           little delay when a wake-up was for another resource). */
        if (inf->r->not_before > now) nap = inf->r->not_before - now;
        else if (now - t0 < KCTL_MS(1) && seen == kctl__rf_events(inf->r)) nap = KCTL_MS(1);
        if (next > now && next - now < nap) nap = next - now;
        kctl__mutex_lock(&inf->mu);
        if (!inf->stop && nap) kctl__cond_wait_for(&inf->cv, &inf->mu, nap < KCTL_MS(100) ? nap : KCTL_MS(100));
        kctl__mutex_unlock(&inf->mu);
    }
    return NULL;
}
#endif

KCTL_API int kctl_informer_start(kctl_informer *inf) {
#ifdef KCTL_NO_THREADS
    (void)inf;
    return KCTL_ERR_INVALID_ARG; /* no threads: call kctl_informer_step */
#else
    int rc = KCTL_OK;
    if (!inf) return KCTL_ERR_INVALID_ARG;
    kctl__mutex_lock(&inf->mu);
    if (inf->running) rc = KCTL_ERR_EXISTS;
    else {
        inf->stop = false;
        inf->running = true;
    }
    kctl__mutex_unlock(&inf->mu);
    if (rc != KCTL_OK) return rc;
    if ((rc = kctl__thread_start(&inf->thread, kctl__inf_main, inf)) != KCTL_OK) {
        kctl__mutex_lock(&inf->mu);
        inf->running = false;
        kctl__mutex_unlock(&inf->mu);
    }
    return rc;
#endif
}

KCTL_API void kctl_informer_stop(kctl_informer *inf) {
#ifndef KCTL_NO_THREADS
    bool running;
    if (!inf) return;
    kctl__mutex_lock(&inf->mu);
    running = inf->running;
    inf->stop = true;
    kctl__cond_broadcast(&inf->cv);
    kctl__mutex_unlock(&inf->mu);
    if (running) {
        kctl__thread_join(inf->thread);
        kctl__mutex_lock(&inf->mu);
        inf->running = false;
        kctl__mutex_unlock(&inf->mu);
    }
#else
    if (!inf) return;
#endif
    kctl__ckpt_on_stop(inf); /* the checkpoint, once nothing steps */
}

KCTL_API bool kctl_informer_has_synced(kctl_informer *inf) {
    bool s;
    if (!inf) return false;
    kctl__mutex_lock(&inf->mu);
    s = inf->synced;
    kctl__mutex_unlock(&inf->mu);
    return s;
}

KCTL_API int kctl_informer_wait_for_sync(kctl_informer *inf, uint64_t timeout_ns) {
    uint64_t end;
    int rc = KCTL_OK;
    if (!inf) return KCTL_ERR_INVALID_ARG;
    end = kctl__add_sat(kctl_clock_now(NULL), timeout_ns);
    kctl__mutex_lock(&inf->mu);
    while (!inf->synced) {
        uint64_t now = kctl_clock_now(NULL);
#ifndef KCTL_NO_THREADS
        if (inf->stats.last_error == KCTL_ERR_NOMEM) { rc = KCTL_ERR_NOMEM; break; } /* a partial cache */
#else
        if ((inf->cache_err ? inf->cache_err : inf->r->stats.last_error) == KCTL_ERR_NOMEM) { rc = KCTL_ERR_NOMEM; break; }
#endif
        if (now >= end) { rc = KCTL_ERR_TIMEOUT; break; }
#ifdef KCTL_NO_THREADS
        rc = KCTL_ERR_TIMEOUT;
        break;
#else
        kctl__cond_wait_for(&inf->cv, &inf->mu, end - now);
#endif
    }
    kctl__mutex_unlock(&inf->mu);
    return rc;
}

KCTL_API void kctl_informer_read_stats(kctl_informer *inf, kctl_reflector_stats *out) {
    if (!out) return;
    memset(out, 0, sizeof *out);
    if (!inf) return;
#ifndef KCTL_NO_THREADS
    kctl__mutex_lock(&inf->mu);
    *out = inf->stats;
    kctl__mutex_unlock(&inf->mu);
#else
    kctl__inf_stats(inf, out);
#endif
}

/* ------------------------------------------------ >>checkpoint CHECKPOINT */
#define KCTL__CKPT_MAGIC "KCTLCKPT"
#define KCTL__CKPT_VERSION 1u
#define KCTL__CKPT_HEADER 24u /* magic 8, version 4, flags 4, payload length 8 */
/* (then the CRC-32 of the payload: 4; the header is 28 bytes in all) */

struct kctl__ckpt {
    kctl_checkpoint_desc d;
    char *path;              /* d.path's copy */
    uint64_t next_due;       /* every_ns: when the next time trigger fires */
    uint64_t events_at_save; /* the reflector's events counted at the last write */
    uint64_t lists_at_save;  /* and its lists (a relist counts as every_events) */
    char saved_rv[KCTL_RV_MAX];
    kctl_checkpoint_stats stats;
};

#ifndef KCTL_NO_CHECKPOINT
/* CRC-32 (IEEE 802.3, reflected, as zlib's), four bits at a time. */
static uint32_t kctl__crc32(const unsigned char *p, size_t n) {
    static const uint32_t t[16] = {
        0x00000000u, 0x1DB71064u, 0x3B6E20C8u, 0x26D930ACu, 0x76DC4190u, 0x6B6B51F4u, 0x4DB26158u, 0x5005713Cu,
        0xEDB88320u, 0xF00F9344u, 0xD6D6A3E8u, 0xCB61B38Cu, 0x9B64C2B0u, 0x86D3D2D4u, 0xA00AE278u, 0xBDBDF21Cu };
    uint32_t c = 0xFFFFFFFFu;
    size_t i;
    for (i = 0; i < n; i++) {
        c ^= p[i];
        c = (c >> 4) ^ t[c & 15];
        c = (c >> 4) ^ t[c & 15];
    }
    return ~c;
}

/* A growing byte buffer; the first failure sticks (NOMEM, TOO_LARGE). */
typedef struct kctl__cbuf {
    unsigned char *p;
    size_t len, cap;
    const kctl_allocator *a;
    int err;
} kctl__cbuf;

static void kctl__cbuf_put(kctl__cbuf *b, const void *data, size_t n) {
    if (b->err) return;
    if (n > b->cap - b->len) {
        size_t cap = b->cap ? b->cap : 4096;
        unsigned char *np;
        while (cap - b->len < n && cap <= SIZE_MAX / 2) cap *= 2;
        if (cap - b->len < n) { b->err = KCTL_ERR_TOO_LARGE; return; }
        if (!(np = (unsigned char *)kctl__alloc(b->a, cap))) { b->err = KCTL_ERR_NOMEM; return; }
        if (b->len) kctl__memcpy(np, b->p, b->len);
        kctl__free(b->a, b->p);
        b->p = np;
        b->cap = cap;
    }
    if (n) kctl__memcpy(b->p + b->len, data, n);
    b->len += n;
}

static void kctl__ckpt_le_put(unsigned char *p, uint64_t v, int bytes) {
    int i;
    for (i = 0; i < bytes; i++) p[i] = (unsigned char)(v >> (8 * i));
}
static uint64_t kctl__ckpt_le_get(const unsigned char *p, int bytes) {
    uint64_t v = 0;
    int i;
    for (i = bytes - 1; i >= 0; i--) v = v << 8 | p[i];
    return v;
}

static void kctl__cbuf_u32(kctl__cbuf *b, uint32_t v) {
    unsigned char x[4];
    kctl__ckpt_le_put(x, v, 4);
    kctl__cbuf_put(b, x, 4);
}
static void kctl__cbuf_str(kctl__cbuf *b, const char *s, size_t n) {
    if (n > UINT32_MAX) { b->err = b->err ? b->err : KCTL_ERR_TOO_LARGE; return; }
    kctl__cbuf_u32(b, (uint32_t)n);
    kctl__cbuf_put(b, s, n);
}

/* The identity a checkpoint is checked against: what the reflector lists. */
static void kctl__ckpt_ident(const kctl_reflector *r, const char *out[6]) {
    out[0] = r->res.group;
    out[1] = r->res.version;
    out[2] = r->res.resource;
    out[3] = r->res.ns;
    out[4] = r->lo.label_selector;
    out[5] = r->lo.field_selector;
}

/* A reader over a checkpoint's payload: every read is bounds-checked, the
   first that does not fit marks it bad. */
typedef struct kctl__crd {
    const unsigned char *p;
    size_t n, off;
    bool bad;
} kctl__crd;

static uint32_t kctl__crd_u32(kctl__crd *c) {
    uint32_t v;
    if (c->bad || c->n - c->off < 4) { c->bad = true; return 0; }
    v = (uint32_t)kctl__ckpt_le_get(c->p + c->off, 4);
    c->off += 4;
    return v;
}
static const char *kctl__crd_str(kctl__crd *c, size_t *len) {
    size_t n = kctl__crd_u32(c);
    const char *s;
    *len = 0;
    if (c->bad || c->n - c->off < n) { c->bad = true; return NULL; }
    s = (const char *)c->p + c->off;
    c->off += n;
    *len = n;
    return s;
}

/* Decode data[0..n) for reflector r into new objects (*objs, *count, each
   a reference) and the version (rv): OK; PROTO with *reason a
   CHECKPOINT_* item; NOMEM. Nothing is kept on failure. */
static int kctl__ckpt_decode(const unsigned char *data, size_t n, const kctl_reflector *r, const kctl_obj_opts *oo,
                             const kctl_allocator *a, kctl_obj ***objs, size_t *count, char rv[KCTL_RV_MAX],
                             uint32_t *reason) {
    kctl__crd c;
    const char *ident[6], *s;
    kctl_obj **all = NULL;
    size_t len, i, total;
    uint64_t plen;
    uint32_t k, cnt;
    int rc = KCTL_OK;
    *objs = NULL;
    *count = 0;
    *reason = KCTL_LOGITEM_CHECKPOINT_CORRUPT;
    if (n < KCTL__CKPT_HEADER + 4 || kctl__memcmp(data, KCTL__CKPT_MAGIC, 8) != 0) return KCTL_ERR_PROTO;
    if (kctl__ckpt_le_get(data + 8, 4) != KCTL__CKPT_VERSION) {
        *reason = KCTL_LOGITEM_CHECKPOINT_OLD_FORMAT;
        return KCTL_ERR_PROTO;
    }
    plen = kctl__ckpt_le_get(data + 16, 8);
    if (kctl__ckpt_le_get(data + 12, 4) != 0 || plen != (uint64_t)(n - KCTL__CKPT_HEADER - 4)) return KCTL_ERR_PROTO; /* truncated, or more */
    if (kctl__crc32(data + KCTL__CKPT_HEADER + 4, (size_t)plen) != (uint32_t)kctl__ckpt_le_get(data + KCTL__CKPT_HEADER, 4))
        return KCTL_ERR_PROTO;
    c.p = data + KCTL__CKPT_HEADER + 4;
    c.n = (size_t)plen;
    c.off = 0;
    c.bad = false;
    s = kctl__crd_str(&c, &len);
    if (c.bad || len == 0 || len >= KCTL_RV_MAX || kctl__memchr(s, '\0', len)) return KCTL_ERR_PROTO;
    kctl__memcpy(rv, s, len);
    rv[len] = '\0';
    kctl__ckpt_ident(r, ident);
    for (k = 0; k < 6; k++) {
        const char *want = ident[k] ? ident[k] : "";
        s = kctl__crd_str(&c, &len);
        if (c.bad) return KCTL_ERR_PROTO;
        if (len != kctl__strlen(want) || kctl__memcmp(s, want, len) != 0) {
            *reason = KCTL_LOGITEM_CHECKPOINT_MISMATCH;
            return KCTL_ERR_PROTO;
        }
    }
    cnt = kctl__crd_u32(&c);
    if (c.bad || cnt > (c.n - c.off) / 4) return KCTL_ERR_PROTO; /* each takes 4 bytes at least */
    if (cnt && !(all = (kctl_obj **)kctl__alloc(a, (size_t)cnt * sizeof *all))) return KCTL_ERR_NOMEM;
    for (total = 0; total < cnt; total++) {
        s = kctl__crd_str(&c, &len);
        if (c.bad) { rc = KCTL_ERR_PROTO; break; }
        if ((rc = kctl_obj_parse(s, len, oo, &all[total])) != KCTL_OK) {
            if (rc != KCTL_ERR_NOMEM) rc = KCTL_ERR_PROTO;
            break;
        }
    }
    if (rc == KCTL_OK && c.off != c.n) rc = KCTL_ERR_PROTO; /* bytes after the last object */
    if (rc != KCTL_OK) { /* never half-loaded */
        for (i = 0; i < total; i++) kctl_obj_unref(all[i]);
        kctl__free(a, all);
        return rc;
    }
    *objs = all;
    *count = cnt;
    return KCTL_OK;
}

/* Encode the cache at version rv into b (header included). */
static void kctl__ckpt_encode(kctl_informer *inf, kctl__cbuf *b) {
    const char *ident[6];
    unsigned char hdr[KCTL__CKPT_HEADER + 4];
    kctl_obj_list l;
    size_t i;
    int k;
    memset(&l, 0, sizeof l);
    memset(hdr, 0, sizeof hdr);
    kctl__cbuf_put(b, hdr, sizeof hdr); /* filled at the end */
    kctl__cbuf_str(b, inf->r->rv, kctl__strlen(inf->r->rv));
    kctl__ckpt_ident(inf->r, ident);
    for (k = 0; k < 6; k++) kctl__cbuf_str(b, ident[k] ? ident[k] : "", ident[k] ? kctl__strlen(ident[k]) : 0);
    if (!b->err && (b->err = kctl_indexer_list(inf->ix, &l)) == KCTL_OK) {
        if (l.count > UINT32_MAX) b->err = KCTL_ERR_TOO_LARGE;
        kctl__cbuf_u32(b, (uint32_t)l.count);
        for (i = 0; i < l.count && !b->err; i++) {
            size_t n;
            const char *doc = kctl_obj_json(l.items[i], &n);
            kctl__cbuf_str(b, doc, n);
        }
    }
    kctl_obj_list_free(&l);
    if (b->err) return;
    kctl__memcpy(b->p, KCTL__CKPT_MAGIC, 8);
    kctl__ckpt_le_put(b->p + 8, KCTL__CKPT_VERSION, 4);
    kctl__ckpt_le_put(b->p + 16, (uint64_t)(b->len - sizeof hdr), 8);
    kctl__ckpt_le_put(b->p + KCTL__CKPT_HEADER, kctl__crc32(b->p + sizeof hdr, b->len - sizeof hdr), 4);
}

static void kctl__ckpt_free(kctl_informer *inf) {
    if (!inf->ckpt) return;
    kctl__free(&inf->allocator, inf->ckpt->path);
    kctl__free(&inf->allocator, inf->ckpt);
    inf->ckpt = NULL;
}

static uint64_t kctl__ckpt_events(const kctl_reflector *r) {
    return r->stats.added + r->stats.modified + r->stats.deleted;
}

/* Write the checkpoint if the cache moved since the last one and holds
   every delta received. */
static int kctl__ckpt_save(kctl_informer *inf) {
    struct kctl__ckpt *ck = inf->ckpt;
    kctl__cbuf b;
    int rc;
    if (!ck || !inf->r->listed || !inf->r->rv[0]) return KCTL_ERR_INVALID_ARG;
    if (kctl_fifo_len(inf->fifo)) return KCTL_ERR_AGAIN; /* the cache lags the version */
    if (kctl__strcmp(ck->saved_rv, inf->r->rv) == 0) return KCTL_OK; /* nothing moved */
    memset(&b, 0, sizeof b);
    b.a = &inf->allocator;
    kctl__ckpt_encode(inf, &b);
    if ((rc = b.err) == KCTL_OK) {
        if (ck->path) {
#ifndef KCTL_NO_FILES
            bool replaced;
            rc = kctl__port_file_replace(ck->path, &inf->allocator, (const char *)b.p, b.len, &replaced);
            if (rc == KCTL_ERR_IO && replaced) rc = KCTL_OK; /* it is written; only the directory's sync failed */
#else
            rc = KCTL_ERR_INVALID_ARG;
#endif
        } else {
            rc = ck->d.save_fn(b.p, b.len, ck->d.user_data);
        }
    }
    kctl__free(&inf->allocator, b.p);
    if (rc != KCTL_OK) {
        ck->stats.save_errors++;
        ck->stats.last_save_error = rc;
        kctl__log(&ck->d.logger, KCTL_LOG_WARN, KCTL_LOGITEM_CHECKPOINT_SAVE_FAILED);
        return rc;
    }
    ck->stats.saves++;
    ck->stats.last_save_error = KCTL_OK;
    kctl__fmt(ck->saved_rv, sizeof ck->saved_rv, "%s", inf->r->rv);
    ck->events_at_save = kctl__ckpt_events(inf->r);
    ck->lists_at_save = inf->r->stats.lists;
    return KCTL_OK;
}

/* The step's hook: save when a trigger fired. */
static void kctl__ckpt_tick(kctl_informer *inf) {
    struct kctl__ckpt *ck = inf->ckpt;
    uint64_t now;
    bool due = false;
    if (!ck || !inf->r->listed) return;
    now = kctl_clock_now(&inf->r->clock);
    if (ck->d.every_events && (kctl__ckpt_events(inf->r) - ck->events_at_save >= ck->d.every_events ||
                               inf->r->stats.lists != ck->lists_at_save)) due = true;
    if (ck->d.every_ns && now >= ck->next_due) due = true;
    if (!due || kctl__ckpt_save(inf) == KCTL_ERR_AGAIN) return; /* AGAIN: at a step with the deltas in */
    if (ck->d.every_ns) ck->next_due = kctl__add_sat(now, ck->d.every_ns);
}

/* The stop's hook. */
static void kctl__ckpt_on_stop(kctl_informer *inf) {
    if (inf->ckpt && inf->r->listed) (void)kctl__ckpt_save(inf);
}

KCTL_API kctl_checkpoint_desc kctl_checkpoint_desc_init(void) {
    kctl_checkpoint_desc d;
    memset(&d, 0, sizeof d);
    return d;
}

KCTL_API int kctl_informer_set_checkpoint(kctl_informer *inf, const kctl_checkpoint_desc *desc) {
    struct kctl__ckpt *ck;
    const unsigned char *data = NULL;
    char *owned = NULL;
    kctl_obj **objs = NULL;
    size_t n = 0, count = 0, i;
    char rv[KCTL_RV_MAX];
    uint32_t reason = 0;
    kctl_reflector *r;
    int rc;
    if (!inf || !desc) return KCTL_ERR_INVALID_ARG;
    if (!desc->path && (!desc->save_fn || !desc->load_fn)) return KCTL_ERR_INVALID_ARG;
#ifdef KCTL_NO_FILES
    if (desc->path) return KCTL_ERR_INVALID_ARG;
#endif
    r = inf->r;
    if (inf->ckpt) return KCTL_ERR_EXISTS;
    if (inf->running || r->listed || r->w || r->stats.errors || r->state != KCTL__RF_LIST) return KCTL_ERR_INVALID_ARG;
    if (!(ck = (struct kctl__ckpt *)kctl__alloc(&inf->allocator, sizeof *ck))) return KCTL_ERR_NOMEM;
    memset(ck, 0, sizeof *ck);
    ck->d = *desc;
    if (desc->path) {
        size_t pl = kctl__strlen(desc->path);
        if (!(ck->path = (char *)kctl__alloc(&inf->allocator, pl + 1))) {
            kctl__free(&inf->allocator, ck);
            return KCTL_ERR_NOMEM;
        }
        kctl__memcpy(ck->path, desc->path, pl + 1);
        ck->d.path = ck->path;
    }
    inf->ckpt = ck;
    ck->next_due = kctl__add_sat(kctl_clock_now(&r->clock), desc->every_ns);
    /* read it */
    if (ck->path) {
#ifndef KCTL_NO_FILES
        rc = kctl__port_file_read(ck->path, &inf->allocator, &owned, &n);
        data = (const unsigned char *)owned;
#else
        rc = KCTL_ERR_INVALID_ARG;
#endif
    } else {
        const void *p = NULL;
        rc = desc->load_fn(&p, &n, desc->user_data);
        data = (const unsigned char *)p;
        if (rc == KCTL_OK && !data && n) rc = KCTL_ERR_INVALID_ARG;
    }
    if (rc == KCTL_ERR_NOT_FOUND || rc == KCTL_ERR_NOMEM) goto done;
    if (rc != KCTL_OK) {
        kctl__log(&desc->logger, KCTL_LOG_WARN, KCTL_LOGITEM_CHECKPOINT_READ_FAILED);
        rc = KCTL_ERR_IO;
        goto done;
    }
    rc = kctl__ckpt_decode(data ? data : (const unsigned char *)"", n, r, &desc->obj_opts, &inf->allocator, &objs, &count, rv, &reason);
    if (rc == KCTL_ERR_PROTO) {
        ck->stats.discarded = 1;
        ck->stats.discard_reason = reason;
        kctl__log(&desc->logger, KCTL_LOG_WARN, (kctl_log_item)reason);
        goto done;
    }
    if (rc != KCTL_OK) goto done;
    if ((rc = kctl__rf_resume(r, objs, count, rv)) == KCTL_OK) {
        ck->stats.loaded = count;
        kctl__fmt(ck->stats.loaded_rv, sizeof ck->stats.loaded_rv, "%s", rv);
        kctl__fmt(ck->saved_rv, sizeof ck->saved_rv, "%s", rv); /* what the file holds already */
    }
    for (i = 0; i < count; i++) kctl_obj_unref(objs[i]);
    kctl__free(&inf->allocator, objs);
done:
    kctl__free(&inf->allocator, owned);
    return rc;
}

KCTL_API int kctl_informer_checkpoint_save(kctl_informer *inf) {
    if (!inf || !inf->ckpt) return KCTL_ERR_INVALID_ARG;
    return kctl__ckpt_save(inf);
}

KCTL_API void kctl_informer_checkpoint_stats(kctl_informer *inf, kctl_checkpoint_stats *out) {
    if (!out) return;
    memset(out, 0, sizeof *out);
    if (inf && inf->ckpt) *out = inf->ckpt->stats;
}
#else /* KCTL_NO_CHECKPOINT: no informer gets one */
static void kctl__ckpt_tick(kctl_informer *inf) { (void)inf; }
static void kctl__ckpt_on_stop(kctl_informer *inf) { (void)inf; }
static void kctl__ckpt_free(kctl_informer *inf) { (void)inf; }
KCTL_API kctl_checkpoint_desc kctl_checkpoint_desc_init(void) {
    kctl_checkpoint_desc d;
    memset(&d, 0, sizeof d);
    return d;
}
KCTL_API int kctl_informer_set_checkpoint(kctl_informer *inf, const kctl_checkpoint_desc *desc) {
    (void)inf;
    (void)desc;
    return KCTL_ERR_UNSUPPORTED;
}
KCTL_API int kctl_informer_checkpoint_save(kctl_informer *inf) {
    (void)inf;
    return KCTL_ERR_UNSUPPORTED;
}
KCTL_API void kctl_informer_checkpoint_stats(kctl_informer *inf, kctl_checkpoint_stats *out) {
    (void)inf;
    if (out) memset(out, 0, sizeof *out);
}
#endif /* KCTL_NO_CHECKPOINT */

/* ------------------------------------------------ >>limiter RATE LIMITERS */
struct kctl_limiter {
    kctl_limiter_vtable vt;
    void *self;
    kctl_allocator a;
};

/* The allocator a limiter keeps: zero for NULL; false for a lone function. */
static KCTL__SMALL_INLINE32 bool kctl__limiter_alloc_of(const kctl_allocator *a, kctl_allocator *out) {
    memset(out, 0, sizeof *out);
    if (!a) return true;
    if ((!a->alloc_fn) != (!a->free_fn)) return false;
    *out = *a;
    return true;
}

static KCTL__SMALL_INLINE32 kctl_limiter *kctl__limiter_new(const kctl_limiter_vtable *vt, void *self, const kctl_allocator *a) {
    kctl_limiter *l = (kctl_limiter *)kctl__alloc(a, sizeof *l);
    if (!l) return NULL;
    l->vt = *vt;
    l->self = self;
    l->a = *a;
    return l;
}

KCTL_API kctl_limiter *kctl_limiter_create_with(const kctl_limiter_vtable *vt, void *self, const kctl_allocator *a) {
    kctl_allocator al;
    if (!vt || !vt->when || !vt->forget || !vt->num_requeues || !kctl__limiter_alloc_of(a, &al)) return NULL;
    return kctl__limiter_new(vt, self, &al);
}

KCTL_API kctl_limiter *kctl_limiter_create(const kctl_limiter_vtable *vt, void *self) {
    return kctl_limiter_create_with(vt, self, NULL);
}

KCTL_API uint64_t kctl_limiter_when(kctl_limiter *l, const char *key) {
    if (!l || !key) return 0;
    return l->vt.when(l->self, key);
}

KCTL_API void kctl_limiter_forget(kctl_limiter *l, const char *key) {
    if (!l || !key) return;
    l->vt.forget(l->self, key);
}

KCTL_API uint32_t kctl_limiter_num_requeues(kctl_limiter *l, const char *key) {
    if (!l || !key) return 0;
    return l->vt.num_requeues(l->self, key);
}

KCTL_API void kctl_limiter_destroy(kctl_limiter *l) {
    if (!l) return;
    if (l->vt.destroy) l->vt.destroy(l->self);
    kctl__free(&l->a, l);
}

/* Per-key failure counts, shared by exponential and fast_slow. */
typedef struct kctl__failure {
    kctl__node node;
    uint32_t count;
} kctl__failure;

typedef struct kctl__perkey {
    kctl_allocator a;
    kctl__mutex mu;
    kctl__map map;
    size_t keys;         /* map.count, stored (relaxed) for forget to read unlocked */
    uint64_t a_ns, b_ns; /* exponential: base, max; fast_slow: fast, slow */
    uint32_t max_fast;
    bool fast_slow;
} kctl__perkey;

/* Record a failure of key; returns the count before it (saturating). When
   memory runs out the failure is not recorded and 0 is returned, so the key
   gets the shortest delay rather than none. */
static uint32_t kctl__perkey_fail(kctl__perkey *p, const char *key) {
    size_t len = kctl__key_len(key);
    uint32_t h, before;
    kctl__failure *f;
    if (!len) return 0;
    h = kctl__hash(key, len);
    kctl__mutex_lock(&p->mu);
    f = (kctl__failure *)kctl__map_find(&p->map, key, len, h);
    if (!f) {
        if (kctl__map_reserve(&p->map, &p->a) != KCTL_OK ||
            !(f = (kctl__failure *)kctl__alloc(&p->a, sizeof *f + len + 1))) {
            kctl__mutex_unlock(&p->mu);
            return 0;
        }
        kctl__memcpy(f + 1, key, len + 1);
        f->node.key = (const char *)(f + 1);
        f->node.len = (uint32_t)len;
        f->node.hash = h;
        f->count = 0;
        kctl__map_insert(&p->map, &f->node);
#ifdef KCTL__HINTS
        KCTL__STORE(&p->keys, p->map.count);
#endif
    }
    before = f->count;
    if (f->count != UINT32_MAX) f->count++;
    kctl__mutex_unlock(&p->mu);
    return before;
}

static uint64_t kctl__perkey_when(void *self, const char *key) {
    kctl__perkey *p = (kctl__perkey *)self;
    uint32_t before = kctl__perkey_fail(p, key);
    if (p->fast_slow) return (uint64_t)before + 1 <= p->max_fast ? p->a_ns : p->b_ns;
    /* base * 2^before, capped at max, without overflow */
    if (before >= 64 || p->a_ns > (p->b_ns >> before)) return p->b_ns;
    return p->a_ns << before;
}

static void kctl__perkey_forget(void *self, const char *key) {
    kctl__perkey *p = (kctl__perkey *)self;
    size_t len;
    kctl__node *n;
#ifdef KCTL__HINTS
    /* No key has failures (the common case, every successful reconcile
       forgets): nothing to take, and no lock that workers would trade, nor
       the key's length to count. A failure recorded before this forget, by
       this thread or one it synchronized with, is seen. */
    if (!KCTL__LOAD(&p->keys)) return;
#endif
    if (!(len = kctl__key_len(key))) return;
    kctl__mutex_lock(&p->mu);
    n = kctl__map_find(&p->map, key, len, kctl__hash(key, len));
    if (n) kctl__map_remove(&p->map, &p->a, n);
#ifdef KCTL__HINTS
    KCTL__STORE(&p->keys, p->map.count);
#endif
    kctl__mutex_unlock(&p->mu);
    kctl__free(&p->a, n);
}

static uint32_t kctl__perkey_num_requeues(void *self, const char *key) {
    kctl__perkey *p = (kctl__perkey *)self;
    size_t len = kctl__key_len(key);
    kctl__failure *f;
    uint32_t c;
    if (!len) return 0;
    kctl__mutex_lock(&p->mu);
    f = (kctl__failure *)kctl__map_find(&p->map, key, len, kctl__hash(key, len));
    c = f ? f->count : 0;
    kctl__mutex_unlock(&p->mu);
    return c;
}

/* Free p's records and its lock (not p). */
static KCTL__SMALL_INLINE32 void kctl__perkey_fini(kctl__perkey *p) {
    size_t i;
    for (i = 0; i < p->map.cap; i++) kctl__free(&p->a, p->map.slots[i].node);
    kctl__free(&p->a, p->map.slots);
    kctl__mutex_deinit(&p->mu);
}

static void kctl__perkey_destroy(void *self) {
    kctl__perkey *p = (kctl__perkey *)self;
    kctl__perkey_fini(p);
    kctl__free(&p->a, p);
}

/* Fill a zeroed p; false when its lock cannot be made. */
static bool kctl__perkey_init(kctl__perkey *p, uint64_t a_ns, uint64_t b_ns, uint32_t max_fast, bool fast_slow,
                              const kctl_allocator *al) {
    p->a = *al;
    p->a_ns = a_ns;
    p->b_ns = b_ns;
    p->max_fast = max_fast;
    p->fast_slow = fast_slow;
    return kctl__mutex_init(&p->mu) == KCTL_OK;
}

static kctl_limiter *kctl__perkey_new(uint64_t a_ns, uint64_t b_ns, uint32_t max_fast, bool fast_slow,
                                      const kctl_allocator *a) {
    static const kctl_limiter_vtable vt = { kctl__perkey_when, kctl__perkey_forget,
                                            kctl__perkey_num_requeues, kctl__perkey_destroy };
    kctl_allocator al;
    kctl__perkey *p;
    kctl_limiter *l;
    if (!kctl__limiter_alloc_of(a, &al) || !(p = (kctl__perkey *)kctl__alloc(&al, sizeof *p))) return NULL;
    memset(p, 0, sizeof *p);
    if (!kctl__perkey_init(p, a_ns, b_ns, max_fast, fast_slow, &al)) { kctl__free(&al, p); return NULL; }
    l = kctl__limiter_new(&vt, p, &al);
    if (!l) kctl__perkey_destroy(p);
    return l;
}

KCTL_API kctl_limiter *kctl_limiter_exponential_with(uint64_t base_ns, uint64_t max_ns, const kctl_allocator *a) {
    if (base_ns == 0 || max_ns < base_ns) return NULL;
    return kctl__perkey_new(base_ns, max_ns, 0, false, a);
}

KCTL_API kctl_limiter *kctl_limiter_exponential(uint64_t base_ns, uint64_t max_ns) {
    return kctl_limiter_exponential_with(base_ns, max_ns, NULL);
}

KCTL_API kctl_limiter *kctl_limiter_fast_slow_with(uint64_t fast_ns, uint64_t slow_ns, uint32_t max_fast,
                                                   const kctl_allocator *a) {
    if (fast_ns > slow_ns) return NULL;
    return kctl__perkey_new(fast_ns, slow_ns, max_fast, true, a);
}

KCTL_API kctl_limiter *kctl_limiter_fast_slow(uint64_t fast_ns, uint64_t slow_ns, uint32_t max_fast) {
    return kctl_limiter_fast_slow_with(fast_ns, slow_ns, max_fast, NULL);
}

static void kctl__bucket_forget(void *self, const char *key) { (void)self; (void)key; }
static uint32_t kctl__bucket_num_requeues(void *self, const char *key) { (void)self; (void)key; return 0; }

#ifndef KCTL_NO_FLOAT
/* The token bucket, with the reservation arithmetic of Go's rate.Limiter. */
typedef struct kctl__bucket {
    kctl_allocator a;
    kctl__mutex mu;
    kctl_clock clock;
    double rate;   /* tokens per second */
    double burst;
    double tokens; /* may go negative: reserved, not yet refilled */
    uint64_t last_ns;
    bool unlimited;
} kctl__bucket;

static uint64_t kctl__bucket_when(void *self, const char *key) {
    kctl__bucket *b = (kctl__bucket *)self;
    uint64_t now, elapsed, wait = 0;
    double tokens;
    (void)key;
    if (b->unlimited) return 0;
    now = kctl_clock_now(&b->clock);
    kctl__mutex_lock(&b->mu);
    if (now < b->last_ns) now = b->last_ns; /* time never goes back here */
    elapsed = now - b->last_ns;
    tokens = b->tokens + ((double)(elapsed / UINT64_C(1000000000)) +
                          (double)(elapsed % UINT64_C(1000000000)) / 1e9) * b->rate;
    if (tokens > b->burst) tokens = b->burst;
    tokens -= 1.0;
    if (tokens < 0) {
        double ns = 1e9 * (-tokens / b->rate);
        wait = ns >= 18446744073709551615.0 ? UINT64_MAX : (uint64_t)ns;
    }
    b->tokens = tokens;
    b->last_ns = now;
    kctl__mutex_unlock(&b->mu);
    return wait;
}

static void kctl__bucket_destroy(void *self) {
    kctl__bucket *b = (kctl__bucket *)self;
    kctl__mutex_deinit(&b->mu);
    kctl__free(&b->a, b);
}

KCTL_API kctl_limiter *kctl_limiter_bucket_with(const kctl_clock *clock, double per_second, uint32_t burst,
                                                const kctl_allocator *a) {
    static const kctl_limiter_vtable vt = { kctl__bucket_when, kctl__bucket_forget,
                                            kctl__bucket_num_requeues, kctl__bucket_destroy };
    kctl_allocator al;
    kctl__bucket *b;
    kctl_limiter *l;
    if (!(per_second > 0) || burst == 0 || !kctl__limiter_alloc_of(a, &al)) return NULL; /* also rejects NaN */
    b = (kctl__bucket *)kctl__alloc(&al, sizeof *b);
    if (!b) return NULL;
    memset(b, 0, sizeof *b);
    b->a = al;
    b->clock = (clock && clock->now_fn) ? *clock : kctl_clock_monotonic();
    b->rate = per_second;
    b->burst = (double)burst;
    b->tokens = (double)burst;
    b->unlimited = !(per_second - per_second == 0); /* +inf: Go's rate.Inf (positive here; no constant x87 holds wider) */
    b->last_ns = kctl_clock_now(&b->clock);
    if (kctl__mutex_init(&b->mu) != KCTL_OK) { kctl__free(&al, b); return NULL; }
    l = kctl__limiter_new(&vt, b, &al);
    if (!l) kctl__bucket_destroy(b);
    return l;
}
#else
KCTL_API kctl_limiter *kctl_limiter_bucket_with(const kctl_clock *clock, double per_second, uint32_t burst, const kctl_allocator *a) {
    (void)clock; (void)per_second; (void)burst; (void)a;
    return NULL; /* no floating point here: kctl_limiter_bucket_rate */
}
#endif

KCTL_API kctl_limiter *kctl_limiter_bucket(const kctl_clock *clock, double per_second, uint32_t burst) {
    return kctl_limiter_bucket_with(clock, per_second, burst, NULL);
}

/* The integer bucket: one token is per_ns units and the bucket gains
   `tokens` units per nanosecond, so refills and waits are exact. */
typedef struct kctl__ibucket {
    kctl__mutex mu;
    kctl_clock clock;
    uint64_t rate; /* units per ns */
    int64_t cost;  /* units per token (per_ns) */
    int64_t cap;   /* burst * cost */
    int64_t units; /* may go negative: reserved, not yet refilled */
    uint64_t last_ns;
    kctl_allocator a;
} kctl__ibucket;

static uint64_t kctl__ibucket_when(void *self, const char *key) {
    kctl__ibucket *b = (kctl__ibucket *)self;
    uint64_t now, elapsed, wait = 0;
    (void)key;
    if (!b->cost) return 0; /* unlimited */
    now = kctl_clock_now(&b->clock);
    kctl__mutex_lock(&b->mu);
    if (now < b->last_ns) now = b->last_ns;
    elapsed = now - b->last_ns;
    if (b->units < b->cap) {
        uint64_t room = (uint64_t)(b->cap - b->units);
        b->units = elapsed >= kctl__udiv64(room, b->rate, NULL) + 1 ? b->cap : b->units + (int64_t)(elapsed * b->rate);
        if (b->units > b->cap) b->units = b->cap;
    }
    if (b->units >= INT64_MIN / 2 + b->cost) b->units -= b->cost; /* saturates some 2^62 units in debt */
    if (b->units < 0) wait = kctl__udiv64((uint64_t)-b->units, b->rate, NULL);
    b->last_ns = now;
    kctl__mutex_unlock(&b->mu);
    return wait;
}

static void kctl__ibucket_destroy(void *self) {
    kctl__ibucket *b = (kctl__ibucket *)self;
    kctl_allocator a = b->a;
    kctl__mutex_deinit(&b->mu);
    kctl__free(&a, b);
}

/* Fill a zeroed b (arguments checked); false when its lock cannot be made. */
static bool kctl__ibucket_init(kctl__ibucket *b, const kctl_clock *clock, uint32_t tokens, uint64_t per_ns, uint32_t burst,
                               const kctl_allocator *al) {
    b->a = *al;
    b->clock = (clock && clock->now_fn) ? *clock : kctl_clock_monotonic();
    b->rate = tokens;
    b->cost = (int64_t)per_ns;
    b->cap = (int64_t)burst * (int64_t)per_ns;
    b->units = b->cap;
    b->last_ns = kctl_clock_now(&b->clock);
    return kctl__mutex_init(&b->mu) == KCTL_OK;
}

KCTL_API kctl_limiter *kctl_limiter_bucket_rate_with(const kctl_clock *clock, uint32_t tokens, uint64_t per_ns, uint32_t burst,
                                                     const kctl_allocator *a) {
    static const kctl_limiter_vtable vt = { kctl__ibucket_when, kctl__bucket_forget,
                                            kctl__bucket_num_requeues, kctl__ibucket_destroy };
    kctl__ibucket *b;
    kctl_limiter *l;
    kctl_allocator al;
    if (tokens == 0 || burst == 0 || (per_ns && per_ns > kctl__udiv64(UINT64_C(1) << 62, burst, NULL)) || !kctl__limiter_alloc_of(a, &al)) return NULL;
    b = (kctl__ibucket *)kctl__alloc(&al, sizeof *b);
    if (!b) return NULL;
    memset(b, 0, sizeof *b);
    if (!kctl__ibucket_init(b, clock, tokens, per_ns, burst, &al)) {
        kctl__free(&al, b);
        return NULL;
    }
    l = kctl__limiter_new(&vt, b, &al);
    if (!l) kctl__ibucket_destroy(b);
    return l;
}

KCTL_API kctl_limiter *kctl_limiter_bucket_rate(const kctl_clock *clock, uint32_t tokens, uint64_t per_ns, uint32_t burst) {
    return kctl_limiter_bucket_rate_with(clock, tokens, per_ns, burst, NULL);
}

typedef struct kctl__maxof {
    kctl_allocator a;
    size_t n;
    kctl_limiter *members[1]; /* n of them */
} kctl__maxof;

static uint64_t kctl__maxof_when(void *self, const char *key) {
    kctl__maxof *m = (kctl__maxof *)self;
    uint64_t best = 0, d;
    size_t i;
    for (i = 0; i < m->n; i++) {
        d = kctl_limiter_when(m->members[i], key);
        if (d > best) best = d;
    }
    return best;
}

static void kctl__maxof_forget(void *self, const char *key) {
    kctl__maxof *m = (kctl__maxof *)self;
    size_t i;
    for (i = 0; i < m->n; i++) kctl_limiter_forget(m->members[i], key);
}

static uint32_t kctl__maxof_num_requeues(void *self, const char *key) {
    kctl__maxof *m = (kctl__maxof *)self;
    uint32_t best = 0, c;
    size_t i;
    for (i = 0; i < m->n; i++) {
        c = kctl_limiter_num_requeues(m->members[i], key);
        if (c > best) best = c;
    }
    return best;
}

static void kctl__maxof_destroy(void *self) {
    kctl__maxof *m = (kctl__maxof *)self;
    size_t i;
    for (i = 0; i < m->n; i++) kctl_limiter_destroy(m->members[i]);
    kctl__free(&m->a, m);
}

KCTL_API kctl_limiter *kctl_limiter_max_of_with(kctl_limiter *const *limiters, size_t n, const kctl_allocator *a) {
    static const kctl_limiter_vtable vt = { kctl__maxof_when, kctl__maxof_forget,
                                            kctl__maxof_num_requeues, kctl__maxof_destroy };
    kctl__maxof *m = NULL;
    kctl_limiter *l;
    kctl_allocator al;
    size_t i;
    bool ok = limiters != NULL && n > 0 && n <= (SIZE_MAX - sizeof *m) / sizeof(kctl_limiter *) &&
              kctl__limiter_alloc_of(a, &al);
    for (i = 0; ok && i < n; i++) ok = limiters[i] != NULL;
    if (ok) m = (kctl__maxof *)kctl__alloc(&al, sizeof *m + n * sizeof(kctl_limiter *));
    if (!m) {
        for (i = 0; limiters && i < n; i++) kctl_limiter_destroy(limiters[i]);
        return NULL;
    }
    m->a = al;
    m->n = n;
    for (i = 0; i < n; i++) m->members[i] = limiters[i];
    l = kctl__limiter_new(&vt, m, &al);
    if (!l) kctl__maxof_destroy(m);
    return l;
}

KCTL_API kctl_limiter *kctl_limiter_max_of(kctl_limiter *const *limiters, size_t n) {
    return kctl_limiter_max_of_with(limiters, n, NULL);
}

/* client-go's default in one object: max_of(exponential, bucket) without
   the max_of and its members' separate allocations and indirect calls.
   Asked in max_of's order (the exponential part, then the bucket); the
   bucket keeps no failures, so forget and num_requeues are the
   exponential part's. */
typedef struct kctl__deflim {
    kctl__perkey p;
    kctl__ibucket b;
} kctl__deflim;

static uint64_t kctl__deflim_when(void *self, const char *key) {
    kctl__deflim *d = (kctl__deflim *)self;
    uint64_t x = kctl__perkey_when(&d->p, key), y = kctl__ibucket_when(&d->b, key);
    return x > y ? x : y;
}

static void kctl__deflim_destroy(void *self) {
    kctl__deflim *d = (kctl__deflim *)self;
    kctl_allocator a = d->p.a;
    kctl__perkey_fini(&d->p);
    kctl__mutex_deinit(&d->b.mu);
    kctl__free(&a, d);
}

KCTL_API kctl_limiter *kctl_limiter_default_with(const kctl_clock *clock, const kctl_allocator *a) {
    static const kctl_limiter_vtable vt = { kctl__deflim_when, kctl__perkey_forget,
                                            kctl__perkey_num_requeues, kctl__deflim_destroy };
    kctl_allocator al;
    kctl__deflim *d;
    kctl_limiter *l;
    if (!kctl__limiter_alloc_of(a, &al) || !(d = (kctl__deflim *)kctl__alloc(&al, sizeof *d))) return NULL;
    memset(d, 0, sizeof *d);
    if (!kctl__perkey_init(&d->p, KCTL_MS(5), KCTL_SEC(1000), 0, false, &al)) {
        kctl__free(&al, d);
        return NULL;
    }
    if (!kctl__ibucket_init(&d->b, clock, 10, KCTL_SEC(1), 100, &al)) {
        kctl__mutex_deinit(&d->p.mu);
        kctl__free(&al, d);
        return NULL;
    }
    if (!(l = kctl__limiter_new(&vt, d, &al))) kctl__deflim_destroy(d);
    return l;
}

/* A 64-bit random step (splitmix64): any seed, even 0, gives a full
   sequence; callers hold whatever lock guards *state. */
static uint64_t kctl__rand64(uint64_t *state) {
    uint64_t z = (*state += UINT64_C(0x9e3779b97f4a7c15));
    z = (z ^ (z >> 30)) * UINT64_C(0xbf58476d1ce4e5b9);
    z = (z ^ (z >> 27)) * UINT64_C(0x94d049bb133111eb);
    return z ^ (z >> 31);
}

/* Uniform in [0, n] (n + 1 values; the modulo bias is below 2^-30 for
   any delay under 2^34 ns, about 17 s, and below 1e-9 of n above it). */
static uint64_t kctl__rand_upto(uint64_t *state, uint64_t n) {
    uint64_t x = kctl__rand64(state);
    uint64_t r;
    if (n == UINT64_MAX) return x;
    kctl__udiv64(x, n + 1, &r);
    return r;
}

typedef struct kctl__jitter {
    kctl__mutex mu;
    kctl_limiter *inner;
    int mode;
    uint64_t rng;
    kctl_allocator a;
} kctl__jitter;

static uint64_t kctl__jitter_when(void *self, const char *key) {
    kctl__jitter *j = (kctl__jitter *)self;
    uint64_t d = kctl_limiter_when(j->inner, key), r;
    kctl__mutex_lock(&j->mu);
    r = j->mode == KCTL_JITTER_FULL ? kctl__rand_upto(&j->rng, d) : d - d / 2 + kctl__rand_upto(&j->rng, d / 2);
    kctl__mutex_unlock(&j->mu);
    return r;
}

static void kctl__jitter_forget(void *self, const char *key) { kctl_limiter_forget(((kctl__jitter *)self)->inner, key); }

static uint32_t kctl__jitter_num_requeues(void *self, const char *key) {
    return kctl_limiter_num_requeues(((kctl__jitter *)self)->inner, key);
}

static void kctl__jitter_destroy(void *self) {
    kctl__jitter *j = (kctl__jitter *)self;
    kctl_allocator a = j->a;
    kctl_limiter_destroy(j->inner);
    kctl__mutex_deinit(&j->mu);
    kctl__free(&a, j);
}

KCTL_API kctl_limiter *kctl_limiter_jitter_with(kctl_limiter *inner, int mode, uint64_t seed, const kctl_allocator *a) {
    static const kctl_limiter_vtable vt = { kctl__jitter_when, kctl__jitter_forget, kctl__jitter_num_requeues, kctl__jitter_destroy };
    kctl__jitter *j;
    kctl_limiter *l;
    kctl_allocator al;
    if (!inner || (mode != KCTL_JITTER_FULL && mode != KCTL_JITTER_EQUAL) || !kctl__limiter_alloc_of(a, &al) ||
        !(j = (kctl__jitter *)kctl__alloc(&al, sizeof *j))) {
        kctl_limiter_destroy(inner);
        return NULL;
    }
    memset(j, 0, sizeof *j);
    j->a = al;
    if (kctl__mutex_init(&j->mu) != KCTL_OK) {
        kctl__free(&al, j);
        kctl_limiter_destroy(inner);
        return NULL;
    }
    j->inner = inner;
    j->mode = mode;
    j->rng = seed ? seed : kctl__port_wall_ns() ^ (uint64_t)(uintptr_t)j;
    if (!(l = kctl__limiter_new(&vt, j, &al))) kctl__jitter_destroy(j);
    return l;
}

KCTL_API kctl_limiter *kctl_limiter_jitter(kctl_limiter *inner, int mode, uint64_t seed) {
    return kctl_limiter_jitter_with(inner, mode, seed, NULL);
}
KCTL_API kctl_limiter *kctl_limiter_default(const kctl_clock *clock) { return kctl_limiter_default_with(clock, NULL); }

/* ----------------------------------------------------- >>queue WORK QUEUE */
/* One entry per key known to the queue, in one hash map, carrying client-go's
   three sets as flags: dirty (added, not yet handed out), processing (handed
   out, not yet done), and for the delaying layer, delayed (in a min-heap of
   add_after times). The ready FIFO, the in-flight list and the recycling
   stack and list are intrusive, so once the map and heap have grown no
   operation allocates.

   Speed comes from keeping producers and workers off each other's cache
   lines, and workers off each other's. The lock word shares its line
   with the FIFO ends and with all that a hand-out and a done write (the
   keys in flight, the returned stack): a worker's get and done write no
   other line of the queue's own; the fields producers write (map, free
   list, add counters) and the rest workers write (in-flight list,
   histograms) sit on separate lines. An entry is 64-byte aligned: its
   first line is what the map reads (the node: key pointer, length,
   hash), written once when the entry is made, so probing, growing and
   removing never pull a line the other side just wrote, and a worker
   never reads it (the key is right after the entry); the second holds
   the links, the flags and the key's first 24 bytes (64-bit); times and
   heap position follow the key. A worker never touches the map in done:
   an entry left without a role stays in the map, idle, on the workers'
   "returned" stack; a producer that needs a fresh entry takes the whole
   stack at once, removes the idle ones from the map and reuses them (an
   idle entry added again is simply revived, and leaves the stack then).
   A done writes no line of another key's: a controller's worker keeps
   its key in flight in a slot of its own (OWNED: found there at done,
   no look-up), other keys in flight are on the in-flight list, and the
   returned stack is pushed at its top.
   Workers waiting for work spin on a push counter on a line of its own
   before they park (at most one spinner fewer than the CPUs, so the
   producer keeps one), and producers signal only parked workers, and
   only for keys no spinner will take. A controller's worker does done
   and its next get in one hold of the lock. */
/* The queue's trim switches (COMPILE-TIME OPTIONS): whether a queue may
   have priority with aging (kctl_priority_desc), a pending_after mode
   other than KEEP and a max_keys; KCTL__QPRIO, KCTL__QPEND and KCTL__QMAX
   are q's, 0 where compiled out, so that the compiler drops what they
   guard. */
#ifdef KCTL_NO_QUEUE_PRIORITY
#define KCTL__Q_PRIO 0
#else
#define KCTL__Q_PRIO 1
#endif
#ifdef KCTL_NO_PENDING_MODES
#define KCTL__Q_PEND 0
#else
#define KCTL__Q_PEND 1
#endif
/* KCTL_SMALL: no returned stack (done takes an idle entry out of the map
   at once, to the free list), no in-flight scan in done (a map lookup),
   no cache-line alignment and no prefetches: the same results in less
   code, for builds with one thread. */
#define KCTL__Q_FAST (!KCTL_SMALL)
#define KCTL__Q_PREFETCH(p) do { if (KCTL__Q_FAST) KCTL__PREFETCH(p); } while (0)
#ifdef KCTL_NO_DURATIONS
#define KCTL__Q_DUR 0
#else
#define KCTL__Q_DUR 1
#endif
#ifdef KCTL_NO_QUEUE_BOUND
#define KCTL__Q_BOUND 0
#else
#define KCTL__Q_BOUND 1
#endif
#ifdef KCTL_NO_THREADS /* get never parks: no worker to wake, and the compiler drops the waking; no worker owns a key */
#define KCTL__Q_PARKS 0
#define KCTL__Q_OWNERS 0
#else
#define KCTL__Q_PARKS 1
#define KCTL__Q_OWNERS 1
#endif
#define KCTL__QTIMED(q) (KCTL__Q_DUR && (q)->timed)
#define KCTL__QMAX(q) (KCTL__Q_BOUND ? (q)->max_keys : 0) /* max_keys; 0 where compiled out */
#define KCTL__QPRIO(q) (KCTL__Q_PRIO && (q)->prio)
#define KCTL__QPEND(q) (KCTL__Q_PEND ? (int)(q)->pending : KCTL_PENDING_KEEP)

enum {
    KCTL__Q_DIRTY = 1,      /* client-go's dirty set */
    KCTL__Q_QUEUED = 2,     /* in the ready FIFO (client-go's queue) */
    KCTL__Q_PROCESSING = 4, /* client-go's processing set */
    KCTL__Q_DELAYED = 8,    /* in the delay heap */
    KCTL__Q_ROLES = 15,     /* an entry with none of these is idle */
    KCTL__Q_LISTED = 16,    /* on the returned stack */
    KCTL__Q_LOW = 32,       /* dirty at low priority: queued on the low list (or held back) */
    KCTL__Q_OWNED = 64      /* in flight to a controller's worker, in its slot (kctl__queue_get's owner) */
};

/* A line the map reads (node, written once when the entry is made: a
   worker's get and done never touch it), a line of links and flags that
   both sides write, then key_cap bytes of key, then the cold part. */
typedef struct kctl__qent {
    kctl__node node;                       /* node.key points right after the entry: kctl__qkey */
    uint32_t key_cap;                      /* bytes for the key, a multiple of 8 */
    char pad_[64 - sizeof(kctl__node) - sizeof(uint32_t)];
    struct kctl__qent *next;               /* ready FIFO, or the free list */
    struct kctl__qent *pnext, *pprev;      /* in-flight list, or the low list */
    struct kctl__qent *rnext;              /* the returned stack */
    uint32_t flags;
    uint32_t spare_;                       /* a size of 8n with 4-byte pointers too: the cold part's 64-bit fields follow the key */
} kctl__qent;

typedef char kctl__qent_size_8n[sizeof(kctl__qent) % 8 == 0 ? 1 : -1]; /* (fails to compile otherwise) */

/* e's key, without reading its first line. */
#define kctl__qkey(e) ((const char *)((e) + 1))

typedef struct kctl__qcold {
    uint64_t added_ns;                     /* became dirty (queue_duration) */
    uint64_t started_ns;                   /* handed out (work_duration); on the low list: when queued (aging) */
    uint64_t ready_ns;                     /* delay heap: when to add */
    uint64_t seq;                          /* delay heap: FIFO among equal times */
    size_t heap_idx;
    void *raw;                             /* the allocation the entry was aligned in */
} kctl__qcold;

static kctl__qcold *kctl__cold(const kctl__qent *e) {
    return (kctl__qcold *)(void *)((char *)(uintptr_t)(e + 1) + e->key_cap);
}

#define KCTL__QUEUE_FREE_MAX 256      /* entries kept for reuse */
#define KCTL__QUEUE_TRIM_NS KCTL_SEC(1) /* after growing, the map shrinks only when idle this much later */
#define KCTL__QUEUE_STEAL_MIN 32      /* returned entries a producer takes at once */
#define KCTL__QUEUE_RETURNED_MAX 1024 /* idle entries before a worker recycles them */
#define KCTL__QUEUE_BATCH 128 /* keys of an informer's batch a controller holds before adding them at once */
#define KCTL__QUEUE_BATCH_NS 50000 /* or the time since the first of them (real time, looked at every 8th key) */
#define KCTL__QUEUE_MIN_KEY_CAP 24    /* the links and 24 key bytes fill the second line (64-bit) */
#define KCTL__QUEUE_INFLIGHT_SCAN 16  /* in-flight entries done() compares by pointer */

typedef struct kctl__qowner {
    kctl__qent *e;                         /* the worker's key in flight, or NULL */
#if KCTL__Q_FAST
    char pad_[64 - sizeof(void *)];        /* each worker writes a line of its own */
#endif
} kctl__qowner;

struct kctl_queue {
    /* -- first, so at the start of a cache line: the ready FIFO's ends,
       what every hand-out and done writes (the keys in flight, the
       returned stack: idle entries still in the map, linked through rnext;
       nreturned stays under KCTL__QUEUE_RETURNED_MAX or max_keys) and the
       lock (its word first): the line every call takes, and the only
       line of the queue's own that a worker's get and done write */
    kctl__qent *head, *tail;
    size_t nready;
    size_t nprocessing;
    kctl__qent *rstack;
    uint32_t nreturned;
    kctl__mutex mu;       /* guards every field but `pushes`, which spinners read without it */
    char pad1_[64];

    /* -- read-only after create, or written rarely (parking, shutdown) */
    kctl_clock clock;
    bool real_clock;      /* no subscribe: time moves as real time does */
    bool timed;           /* named: record durations (client-go: metrics for named queues only) */
    bool prio;            /* kctl_priority_desc.enabled: get looks at the low list */
    uint8_t pending;      /* kctl_pending_mode */
    bool shutting_down;
    uint64_t aging_ns;    /* kctl_priority_desc.aging_ns */
    kctl_limiter *limiter;
    kctl_allocator allocator;
    kctl_logger logger;
    kctl_clock_waiter waiter;
    void *raw;            /* the allocation this struct was aligned in */
    uint32_t sleepers;    /* workers parked on work_cv */
    uint32_t wakes;       /* signals sent to work_cv that no parked worker has woken from yet */
    uint32_t to_wake;     /* signals owed once the lock is let go (hold_wakes) */
    bool hold_wakes;      /* an add's signals wait for its unlock: the woken worker finds the lock free */
    uint32_t spinners;    /* workers spinning for a push: each looks at the FIFO when it ends */
    uint32_t max_spinners; /* CPUs seen less one: a CPU stays for the producer */
    uint32_t drainers;    /* threads in shutdown_with_drain */
    uint32_t parks;       /* times a worker parked (when to ask its CPUs again) */
    uint64_t cpu_mask;    /* CPUs of the creator and of parked workers (0: not known) */
    char name[64];
    kctl__cond work_cv;   /* workers wait here for a ready key */
    kctl__cond idle_cv;   /* shutdown_with_drain waits here */
    char pad0_[64];

    /* -- written by producers (add, add_after) */
    uint64_t adds, retries, seq;
    uint64_t refused;     /* adds refused with FULL */
    size_t max_keys;      /* 0: no bound */
    kctl__map map;
    kctl__qent *free_list;
    size_t nfree;
    uint64_t grown_ns;    /* when the map last grew (the queue's clock) */
    kctl__qent **heap;    /* the delayed keys: a min-heap on (ready_ns, seq); under KCTL_SMALL unordered, scanned for the earliest */
    size_t nheap, heap_cap;
    uint64_t cancelled;   /* delayed adds removed or dropped (pending) */
    /* priority: the low keys ready, oldest first, linked through
       pnext/pprev (a queued entry is not in flight; the returned stack
       links through rnext); nlow of them (counted in nready too) */
    kctl__qent low;
    size_t nlow;
    bool last_low;        /* the last key handed out was a low one (aging alternates) */
    char pad2_[64];

    /* -- written by workers (get, done) */
#ifdef KCTL__HINTS
    kctl__spin spin;      /* whether an idle worker spins for work (under mu) */
#endif
    kctl__qent inflight;  /* sentinel of the in-flight list: the keys in flight not OWNED */
    kctl_histogram queue_hist, work_hist;
    /* a controller's workers' slots (kctl__queue_owners), a line each in
       fast builds: the key each one has in flight, OWNED */
    struct kctl__qowner *owners;
    uint32_t nowners;
    void *owners_raw;     /* the allocation owners was aligned in */
    char pad3_[64];

    /* -- bumped under mu whenever a key becomes ready or the queue shuts
       down; read without the lock by workers spinning for work */
    unsigned pushes;
    char pad4_[64];
};

static void kctl__hist_observe(kctl_histogram *h, uint64_t ns) {
    uint64_t bound = 10;
    int i;
    h->count++;
    h->sum_ns = kctl__add_sat(h->sum_ns, ns);
    for (i = 0; i < KCTL_HIST_BUCKETS; i++, bound *= 10)
        if (ns <= bound) { h->buckets[i]++; break; }
}

KCTL_API uint64_t kctl_histogram_bound_ns(int i) {
    uint64_t b = 10;
    if (i < 0 || i >= KCTL_HIST_BUCKETS) return UINT64_MAX;
    while (i-- > 0) b *= 10;
    return b;
}

static uint64_t kctl__queue_now(kctl_queue *q) { return q->clock.now_fn(q->clock.user_data); }

static void kctl__queue_bump(kctl_queue *q) {
#ifdef KCTL__HINTS
    KCTL__STORE(&q->pushes, KCTL__LOAD(&q->pushes) + 1u);
#else
    (void)q;
#endif
}

/* Keys with a role (one in two roles counted twice). Lock held. */
static void kctl__queue_free_entry(kctl_queue *q, kctl__qent *e) {
    if (q->nfree < KCTL__QUEUE_FREE_MAX && (!KCTL__QMAX(q) || q->nfree < q->max_keys)) {
        e->next = q->free_list;
        q->free_list = e;
        q->nfree++;
    } else {
        kctl__free(&q->allocator, kctl__cold(e)->raw);
    }
}

static void kctl__list_init(kctl__qent *sentinel) { sentinel->pnext = sentinel->pprev = sentinel; }
static void kctl__list_append(kctl__qent *sentinel, kctl__qent *e) {
    e->pnext = sentinel;
    e->pprev = sentinel->pprev;
    sentinel->pprev->pnext = e;
    sentinel->pprev = e;
}
static void kctl__list_unlink(kctl__qent *e) {
    e->pprev->pnext = e->pnext;
    e->pnext->pprev = e->pprev;
    e->pnext = e->pprev = NULL;
}

/* Recycle the returned stack, taken whole: idle entries leave the map for
   the free list; entries revived meanwhile just leave the stack. Lock
   held. */
static void kctl__queue_recycle(kctl_queue *q) {
    kctl__qent *e = q->rstack, *n;
    q->rstack = NULL;
    q->nreturned = 0;
    for (; e; e = n) {
        n = e->rnext;
        KCTL__Q_PREFETCH(n);
        e->flags &= ~(uint32_t)KCTL__Q_LISTED;
        if (!(e->flags & KCTL__Q_ROLES)) {
            kctl__map_unlink(&q->map, &e->node); /* no shrinking in use: kctl__queue_trim */
            kctl__queue_free_entry(q, e);
        }
    }
}

/* An entry that lost its last role outside done (shutdown, a failed
   add_after): out of the map now, unless it waits on the returned stack. */
static void kctl__queue_retire(kctl_queue *q, kctl__qent *e) {
    if (e->flags & (KCTL__Q_ROLES | KCTL__Q_LISTED)) return;
    kctl__map_unlink(&q->map, &e->node);
    kctl__queue_free_entry(q, e);
}

/* Nothing is ready to hand out (a get found nothing, or a poll asks when
   to come back): a map that a burst grew and that is now mostly empty
   shrinks, once KCTL__QUEUE_TRIM_NS have passed since it last grew, with
   keys in flight or delayed or not (a controller nearly always has a
   requeue pending: the table is the keys' slots, not the keys, and
   entries never move). Removing keys never shrinks it (kctl__map_unlink):
   a queue whose keys come in waves keeps its table, and does not shrink
   and grow it with each wave. Returns the ns until it may shrink, 0 when
   it will not: a parking worker waits no longer than that (a queue whose
   workers park for good after a burst gives the table back too), and a
   poll loop's deadline comes no later (kctl__queue_due). With no memory
   for the smaller table it tries again a period later, never at once.
   Lock held. */
static uint64_t kctl__queue_trim(kctl_queue *q) {
    uint64_t now;
    if (q->map.cap <= 64 || q->map.count * 16 >= q->map.cap) return 0;
    now = kctl__queue_now(q);
    if (now < q->grown_ns || now - q->grown_ns >= KCTL__QUEUE_TRIM_NS) {
        if (kctl__map_resize(&q->map, &q->allocator, kctl__map_fit(q->map.cap, q->map.count)) == KCTL_OK) return 0;
        q->grown_ns = now; /* no memory: a period from now */
    }
    return KCTL__QUEUE_TRIM_NS - (now - q->grown_ns);
}

static kctl__qent *kctl__queue_entry_new(kctl_queue *q, const char *key, size_t len, uint32_t hash) {
    kctl__qent *e;
    if (KCTL__Q_FAST && !q->free_list && q->nreturned >= KCTL__QUEUE_STEAL_MIN) kctl__queue_recycle(q);
    e = q->free_list;
    if (e && e->key_cap > len) {
        q->free_list = e->next;
        q->nfree--;
        if (q->free_list) KCTL__Q_PREFETCH(q->free_list); /* for the next add, which will write it */
    } else {
        size_t cap = len + 1 <= KCTL__QUEUE_MIN_KEY_CAP ? KCTL__QUEUE_MIN_KEY_CAP : (len + 8) & ~(size_t)7;
        void *raw = kctl__alloc(&q->allocator, sizeof *e + cap + sizeof(kctl__qcold) + (KCTL__Q_FAST ? 63 : 0));
        if (!raw) return NULL;
        e = KCTL__Q_FAST ? (kctl__qent *)(void *)(((uintptr_t)raw + 63) & ~(uintptr_t)63) : (kctl__qent *)raw;
        e->key_cap = (uint32_t)cap;
        kctl__cold(e)->raw = raw;
    }
    kctl__memcpy(e + 1, key, len);
    ((char *)(e + 1))[len] = 0;
    e->node.key = (const char *)(e + 1);
    e->node.len = (uint32_t)len;
    e->node.hash = hash;
    e->next = e->pnext = e->pprev = e->rnext = NULL;
    e->flags = 0;
    return e;
}

/* Whether a key the queue does not hold would pass max_keys: keys counted
   by role (waiting, in flight, delayed; one in two roles twice). Lock held. */
static bool kctl__queue_full(const kctl_queue *q) {
    return KCTL__QMAX(q) && q->nready + q->nprocessing + q->nheap >= q->max_keys;
}

/* Refuse a new key for max_keys: count and log it. Lock held; logs after. */
static int kctl__queue_refuse(kctl_queue *q) {
    q->refused++;
    kctl__mutex_unlock(&q->mu);
    kctl__log(&q->logger, KCTL_LOG_WARN, KCTL_LOGITEM_QUEUE_FULL);
    return KCTL_ERR_FULL;
}

/* Find key's entry, or create it (no role yet): *created says which.
   NULL on NOMEM, or (*full) when the queue is full and does not hold the
   key. Lock held. */
static kctl__qent *kctl__queue_lookup(kctl_queue *q, const char *key, size_t len, uint32_t hash, bool *created, bool *full) {
    kctl__qent *e = (kctl__qent *)kctl__map_find(&q->map, key, len, hash);
    *created = false;
    *full = false;
    if (e && (e->flags & KCTL__Q_ROLES)) return e;
    if (kctl__queue_full(q)) { /* an idle entry counts as a new key */
        *full = true;
        return NULL;
    }
    if (e) return e;
    if ((q->map.count + 1) * 16 > q->map.cap * 12) { /* it grows (kctl__map_reserve): when, for kctl__queue_trim */
        if (kctl__map_reserve(&q->map, &q->allocator) != KCTL_OK) return NULL;
        q->grown_ns = kctl__queue_now(q);
    }
    e = kctl__queue_entry_new(q, key, len, hash);
    if (!e) return NULL;
    kctl__map_insert(&q->map, &e->node);
    *created = true;
    return e;
}

/* A key became ready (q->nready counts it): wake one parked worker, as
   client-go's Add signals once per key; but not for a key a spinning
   worker will take (each spinner looks at the ready keys, under the lock,
   when its spin ends: the first `spinners` ready keys are theirs), and not
   more signals than workers parked and not yet signalled: a producer that
   outruns a wake-up makes one futex call, not one per key. Lock held. */
static void kctl__queue_woken(kctl_queue *q) {
    kctl__queue_bump(q);
    if (KCTL__Q_PARKS && q->sleepers > q->wakes && q->nready > q->spinners) {
        q->wakes++;
        if (q->hold_wakes) q->to_wake++;
        else kctl__cond_signal(&q->work_cv);
    }
}

static void kctl__queue_push_ready(kctl_queue *q, kctl__qent *e) {
    e->flags |= KCTL__Q_QUEUED;
    e->next = NULL;
    if (q->tail) q->tail->next = e;
    else q->head = e;
    q->tail = e;
    q->nready++;
    kctl__queue_woken(q);
}

/* client-go's Type.Add on an entry, lock held. Returns true when the key
   was queued (a worker may be woken). */
static bool kctl__queue_raise(kctl_queue *q, kctl__qent *e);
static void kctl__queue_push_low(kctl_queue *q, kctl__qent *e, uint64_t now);
static bool kctl__queue_add_entry(kctl_queue *q, kctl__qent *e, uint64_t now) {
    if (e->flags & KCTL__Q_DIRTY) return (KCTL__Q_PRIO && (e->flags & KCTL__Q_LOW)) ? kctl__queue_raise(q, e) : false;
    e->flags |= KCTL__Q_DIRTY;
    if (KCTL__QTIMED(q)) kctl__cold(e)->added_ns = now;
    q->adds++;
    if (e->flags & KCTL__Q_PROCESSING) return false; /* held back until done */
    kctl__queue_push_ready(q, e);
    return true;
}

/* ---- the delay heap, ordered by (ready_ns, seq) */
static bool kctl__heap_less(const kctl__qent *a, const kctl__qent *b) {
    const kctl__qcold *x = kctl__cold(a), *y = kctl__cold(b);
    return x->ready_ns != y->ready_ns ? x->ready_ns < y->ready_ns : x->seq < y->seq;
}

static void kctl__heap_set(kctl_queue *q, size_t i, kctl__qent *e) {
    q->heap[i] = e;
    kctl__cold(e)->heap_idx = i;
}

#if KCTL_SMALL
/* KCTL_SMALL: the delayed keys unordered, the first by a scan (a few
   keys wait on a small device): the same order as the heap's, which
   (ready_ns, seq) makes total, in less code. Nothing moves on an add or
   an earlier time; a removal fills the hole with the last (promote takes
   the first with one scan). */
static kctl__qent *kctl__heap_first(const kctl_queue *q) {
    kctl__qent *m = q->heap[0];
    size_t i;
    for (i = 1; i < q->nheap; i++)
        if (kctl__heap_less(q->heap[i], m)) m = q->heap[i];
    return m;
}
#define kctl__heap_up(q, i) ((void)0)

static void kctl__heap_remove(kctl_queue *q, kctl__qent *e) {
    kctl__heap_set(q, kctl__cold(e)->heap_idx, q->heap[--q->nheap]);
    e->flags &= ~(uint32_t)KCTL__Q_DELAYED;
}

#else
#define kctl__heap_first(q) ((q)->heap[0])

static void kctl__heap_up(kctl_queue *q, size_t i) {
    kctl__qent *e = q->heap[i];
    while (i > 0) {
        size_t parent = (i - 1) / 2;
        if (!kctl__heap_less(e, q->heap[parent])) break;
        kctl__heap_set(q, i, q->heap[parent]);
        i = parent;
    }
    kctl__heap_set(q, i, e);
}

static void kctl__heap_down(kctl_queue *q, size_t i) {
    kctl__qent *e = q->heap[i];
    for (;;) {
        size_t c = 2 * i + 1;
        if (c >= q->nheap) break;
        if (c + 1 < q->nheap && kctl__heap_less(q->heap[c + 1], q->heap[c])) c++;
        if (!kctl__heap_less(q->heap[c], e)) break;
        kctl__heap_set(q, i, q->heap[c]);
        i = c;
    }
    kctl__heap_set(q, i, e);
}

static kctl__qent *kctl__heap_pop(kctl_queue *q) {
    kctl__qent *top = q->heap[0];
    q->nheap--;
    if (q->nheap) {
        kctl__heap_set(q, 0, q->heap[q->nheap]);
        kctl__heap_down(q, 0);
    }
    top->flags &= ~(uint32_t)KCTL__Q_DELAYED;
    return top;
}
#endif

static uint64_t kctl__heap_top_ns(const kctl_queue *q) { return kctl__cold(kctl__heap_first(q))->ready_ns; }

static int kctl__heap_reserve(kctl_queue *q) {
    kctl__qent **h;
    size_t cap;
    if (q->nheap < q->heap_cap) return KCTL_OK;
    cap = q->heap_cap ? q->heap_cap * 2 : 16;
    h = (kctl__qent **)kctl__alloc(&q->allocator, cap * sizeof *h);
    if (!h) return KCTL_ERR_NOMEM;
    if (q->nheap) kctl__memcpy(h, q->heap, q->nheap * sizeof *h);
    kctl__free(&q->allocator, q->heap);
    q->heap = h;
    q->heap_cap = cap;
    return KCTL_OK;
}

/* Move every delayed key whose time has come into the queue. client-go's
   waitingLoop does this on its own goroutine at the ready time; here whoever
   holds the lock next does it, and the key counts as added at its ready
   time, so queue_duration is the same. Lock held. */
static void kctl__queue_promote(kctl_queue *q, uint64_t now) {
#if KCTL_SMALL /* one scan per key: the first, looked at and taken */
    kctl__qent *e;
    while (q->nheap && kctl__cold(e = kctl__heap_first(q))->ready_ns <= now) {
        kctl__heap_remove(q, e);
#else
    while (q->nheap && kctl__heap_top_ns(q) <= now) {
        kctl__qent *e = kctl__heap_pop(q);
#endif
        kctl__queue_add_entry(q, e, kctl__cold(e)->ready_ns); /* it was added when its time came */
    }
}

/* ---- kctl_pending_mode and priority with aging (kctl_priority_desc):
   off the plain path, each entered only for a key that is delayed or low */

/* Take e out of the delay heap (its cold part knows its place): O(log n).
   Lock held. */
#if !KCTL_SMALL /* (KCTL_SMALL: above) */
static void kctl__heap_remove(kctl_queue *q, kctl__qent *e) {
    size_t i = kctl__cold(e)->heap_idx;
    kctl__qent *last = q->heap[--q->nheap];
    e->flags &= ~(uint32_t)KCTL__Q_DELAYED;
    if (last == e) return; /* it was the last */
    kctl__heap_set(q, i, last);
    if (i > 0 && kctl__heap_less(last, q->heap[(i - 1) / 2])) kctl__heap_up(q, i);
    else kctl__heap_down(q, i);
}
#endif

/* A plain add of e, which waits on an add_after, under CANCEL or MERGE:
   the add_after goes (the add that follows queues e now). Lock held. */
static void kctl__queue_cancel_after(kctl_queue *q, kctl__qent *e) {
    kctl__heap_remove(q, e);
    q->cancelled++;
}

/* Put e (dirty and low) at the end of the low list; now starts its aging.
   Lock held. */
static void kctl__queue_push_low(kctl_queue *q, kctl__qent *e, uint64_t now) {
    e->flags |= KCTL__Q_QUEUED;
    kctl__cold(e)->started_ns = now;
    kctl__list_append(&q->low, e);
    q->nlow++;
    q->nready++;
    kctl__queue_woken(q);
}

/* A normal add of e, dirty at low priority: it is low no more, and if it
   waits on the low list it moves to the end of the normal FIFO (held back
   while processing, it is queued normal at done). True when queued. Lock
   held. */
static bool kctl__queue_raise(kctl_queue *q, kctl__qent *e) {
    e->flags &= ~(uint32_t)KCTL__Q_LOW;
    if (!(e->flags & KCTL__Q_QUEUED)) return false;
    kctl__list_unlink(e);
    q->nlow--;
    q->nready--;
    e->flags &= ~(uint32_t)KCTL__Q_QUEUED;
    kctl__queue_push_ready(q, e);
    return true;
}

/* kctl_queue_add_low on an entry (priority on). Lock held. */
static void kctl__queue_add_low_entry(kctl_queue *q, kctl__qent *e, uint64_t now) {
    if (e->flags & KCTL__Q_DIRTY) return; /* queued already: its place and priority stay */
    e->flags |= KCTL__Q_DIRTY | KCTL__Q_LOW;
    if (KCTL__QTIMED(q)) kctl__cold(e)->added_ns = now;
    q->adds++;
    if (!(e->flags & KCTL__Q_PROCESSING)) kctl__queue_push_low(q, e, now);
}

/* Before get takes the head of the normal FIFO, with priority on: move
   the oldest low key there when it goes next, that is when no normal key
   waits, or when it has aged and the key handed out last was a normal one
   (kctl_priority_desc's rule). Lock held, a key ready. */
static void kctl__queue_pick_prio(kctl_queue *q) {
    kctl__qent *e = q->low.pnext;
    if (q->nlow && q->head) {
        uint64_t t = kctl__queue_now(q), since = kctl__cold(e)->started_ns;
        if (q->last_low || t < since || t - since < q->aging_ns) e = NULL;
    } else if (!q->nlow) {
        e = NULL;
    }
    q->last_low = e != NULL;
    if (e) {
        kctl__list_unlink(e);
        q->nlow--;
        e->flags &= ~(uint32_t)KCTL__Q_LOW;
        e->next = q->head;
        q->head = e;
        if (!q->tail) q->tail = e;
    }
}

/* The virtual clock moved: wake parked workers to look at the heap again. */
static void kctl__queue_wake(void *arg) {
    kctl_queue *q = (kctl_queue *)arg;
    kctl__mutex_lock(&q->mu);
    if (KCTL__Q_PARKS && q->sleepers) kctl__cond_broadcast(&q->work_cv);
    kctl__mutex_unlock(&q->mu);
}

KCTL_API kctl_queue_desc kctl_queue_desc_init(void) {
    kctl_queue_desc d;
    memset(&d, 0, sizeof d);
    d.name = "";
    d.clock = kctl_clock_monotonic();
    d.priority.aging_ns = KCTL_SEC(10);
    return d;
}

KCTL_API int kctl_queue_create(const kctl_queue_desc *desc, kctl_queue **out) {
    kctl_queue_desc d;
    kctl_queue *q;
    void *raw;
    size_t i;
    int rc = KCTL_ERR_INVALID_ARG;
    memset(&d, 0, sizeof d); /* zero is the default everywhere (kctl_queue_desc_init's values are filled below) */
    if (desc) kctl__memcpy(&d, desc, sizeof d); /* (not d = *desc: see kctl__own_memcpy) */
    if (!d.name) d.name = "";
    if (!d.clock.now_fn) d.clock = kctl_clock_monotonic();
    if (!out || (!d.allocator.alloc_fn) != (!d.allocator.free_fn) ||
        (!d.clock.subscribe_fn) != (!d.clock.unsubscribe_fn) ||
        d.pending_after < KCTL_PENDING_KEEP || d.pending_after > KCTL_PENDING_MERGE)
        goto refused;
    rc = KCTL_ERR_UNSUPPORTED; /* a part compiled out (COMPILE-TIME OPTIONS) */
    if ((!KCTL__Q_PRIO && d.priority.enabled) || (!KCTL__Q_PEND && d.pending_after != KCTL_PENDING_KEEP) ||
        (!KCTL__Q_BOUND && d.max_keys))
        goto refused;
    *out = NULL;
    /* Cache-line aligned, so the padding above separates what it should. */
    raw = kctl__alloc(&d.allocator, sizeof *q + (KCTL__Q_FAST ? 63 : 0));
    if (!raw) {
        rc = KCTL_ERR_NOMEM;
    refused: /* the limiter is ours from the call on */
        kctl_limiter_destroy(d.limiter);
        return rc;
    }
    q = KCTL__Q_FAST ? (kctl_queue *)(void *)(((uintptr_t)raw + 63) & ~(uintptr_t)63) : (kctl_queue *)raw;
    memset(q, 0, sizeof *q);
    q->raw = raw;
    q->allocator = d.allocator;
    q->logger = d.logger;
    q->clock = d.clock;
    q->real_clock = d.clock.subscribe_fn == NULL;
    for (i = 0; i < sizeof q->name - 1 && d.name[i]; i++) q->name[i] = d.name[i]; /* the first 63 bytes (q is zeroed) */
    q->timed = KCTL__Q_DUR && q->name[0] != 0;
    q->max_keys = d.max_keys;
    q->pending = (uint8_t)d.pending_after;
    q->prio = d.priority.enabled;
    if (KCTL__Q_PRIO) q->aging_ns = d.priority.aging_ns ? d.priority.aging_ns : KCTL_SEC(10);
    kctl__list_init(&q->inflight);
    if (KCTL__Q_PRIO) kctl__list_init(&q->low);
    q->limiter = d.limiter ? d.limiter : kctl_limiter_default_with(&q->clock, &q->allocator);
    if (!q->limiter) {
        kctl__log(&q->logger, KCTL_LOG_ERROR, KCTL_LOGITEM_QUEUE_LIMITER_FAILED);
        goto fail0; /* (destroying no limiter) */
    }
    if (kctl__mutex_init(&q->mu) != KCTL_OK) goto fail0;
#ifdef KCTL__HINTS
    {
        int cpus = kctl__cpus_usable();
        kctl__spin_init(&q->spin, KCTL_QUEUE_SPIN, cpus);
        q->max_spinners = cpus > 1 ? (uint32_t)cpus - 1 : 0;
        q->cpu_mask = kctl__cpu_mask();
    }
#endif
    if (kctl__cond_init(&q->work_cv) != KCTL_OK) goto fail1;
    if (kctl__cond_init(&q->idle_cv) != KCTL_OK) goto fail2;
    if (!q->real_clock) {
        q->waiter.wake = kctl__queue_wake;
        q->waiter.arg = q;
        q->clock.subscribe_fn(&q->waiter, q->clock.user_data);
    }
    *out = q;
    return KCTL_OK;
fail2:
    kctl__cond_deinit(&q->work_cv);
fail1:
    kctl__mutex_deinit(&q->mu);
fail0:
    kctl_limiter_destroy(q->limiter);
    kctl__free(&d.allocator, raw);
    return KCTL_ERR_NOMEM;
}

KCTL_API void kctl_queue_destroy(kctl_queue *q) {
    kctl_allocator a;
    kctl__qent *e;
    size_t i;
    if (!q) return;
    if (!q->real_clock) q->clock.unsubscribe_fn(&q->waiter, q->clock.user_data);
    a = q->allocator;
    /* Every live or idle entry is in the map; the free list holds the rest. */
    for (i = 0; i < q->map.cap; i++)
        if (q->map.slots[i].node) kctl__free(&a, kctl__cold((kctl__qent *)q->map.slots[i].node)->raw);
    while ((e = q->free_list) != NULL) {
        q->free_list = e->next;
        kctl__free(&a, kctl__cold(e)->raw);
    }
    kctl__free(&a, q->map.slots);
    kctl__free(&a, q->heap);
    if (KCTL__Q_OWNERS) kctl__free(&a, q->owners_raw);
    kctl_limiter_destroy(q->limiter);
    kctl__cond_deinit(&q->idle_cv);
    kctl__cond_deinit(&q->work_cv);
    kctl__mutex_deinit(&q->mu);
    kctl__free(&a, q->raw);
}

#ifndef KCTL_NO_THREADS
/* Slots for n workers of a controller (kctl__queue_get's owner: 1 to n),
   made once, before any worker runs. NOMEM. */
static int kctl__queue_owners(kctl_queue *q, uint32_t n) {
    size_t bytes = (size_t)n * sizeof(kctl__qowner);
    void *raw;
    if (!n) return KCTL_OK;
    if (bytes / sizeof(kctl__qowner) != n || !(raw = kctl__alloc(&q->allocator, bytes + (KCTL__Q_FAST ? 63 : 0))))
        return KCTL_ERR_NOMEM;
    q->owners_raw = raw;
    q->owners = (kctl__qowner *)(void *)(KCTL__Q_FAST ? ((uintptr_t)raw + 63) & ~(uintptr_t)63 : (uintptr_t)raw);
    memset(q->owners, 0, bytes);
    q->nowners = n;
    return KCTL_OK;
}
#endif

/* What every add does first: take the lock, move the delayed keys whose
   time has come into the queue, find or make key's entry. *now: the
   time, read before the lock by the caller when fresh (a real clock: it
   keeps the lock short), else read here under it when need_now or a key
   is delayed (a virtual clock: an advance must not slip in between). The
   entry with the lock held; or NULL with it released and *rc SHUTDOWN,
   FULL or NOMEM (counted and logged). */
#if !KCTL_SMALL && (defined(__GNUC__) || defined(__clang__))
#define KCTL__Q_ENTER_INLINE __attribute__((always_inline)) inline /* the default build: each add keeps its own code */
#else
#define KCTL__Q_ENTER_INLINE /* KCTL_SMALL: one copy for the three */
#endif
static KCTL__Q_ENTER_INLINE kctl__qent *kctl__queue_enter(kctl_queue *q, const char *key, size_t len, uint32_t h, bool fresh,
                                                          bool need_now, uint64_t *now, bool *created, int *rc) {
    kctl__qent *e;
    bool full;
    kctl__mutex_lock(&q->mu);
    if (q->shutting_down) {
        kctl__mutex_unlock(&q->mu);
        *rc = KCTL_ERR_SHUTDOWN;
        return NULL;
    }
    if (!fresh && (need_now || q->nheap)) *now = kctl__queue_now(q);
    if (q->nheap) kctl__queue_promote(q, *now); /* delayed keys whose time has come go first */
    e = kctl__queue_lookup(q, key, len, h, created, &full);
    if (!e) {
        if (full) {
            *rc = kctl__queue_refuse(q);
            return NULL;
        }
        kctl__mutex_unlock(&q->mu);
        kctl__log(&q->logger, KCTL_LOG_ERROR, KCTL_LOGITEM_QUEUE_NOMEM);
        *rc = KCTL_ERR_NOMEM;
    }
    return e;
}

/* kctl_queue_add of a key whose length (1 to KCTL_MAX_KEY_LEN) and hash
   are known: an object's (its node), from the controller's handlers. */
static int kctl__queue_add_hashed(kctl_queue *q, const char *key, size_t len, uint32_t h) {
    uint64_t now = 0;
    kctl__qent *e;
    bool created;
#if KCTL_SMALL
    bool fresh = KCTL__QTIMED(q) && q->real_clock;
    int rc;
    if (fresh) now = kctl__queue_now(q); /* outside the lock: keeps it short */
    if (!(e = kctl__queue_enter(q, key, len, h, fresh, KCTL__QTIMED(q), &now, &created, &rc))) return rc;
#else /* the hot path of every event: its own code, no out-parameters */
    bool full;
    kctl__map_prefetch(&q->map, h);
    now = KCTL__QTIMED(q) ? kctl__queue_now(q) : 0; /* outside the lock: keeps it short */
    kctl__mutex_lock(&q->mu);
    if (q->shutting_down) {
        kctl__mutex_unlock(&q->mu);
        return KCTL_ERR_SHUTDOWN;
    }
    if (q->nheap) { /* delayed keys whose time has come go first */
        if (!KCTL__QTIMED(q) || !q->real_clock) now = kctl__queue_now(q);
        kctl__queue_promote(q, now);
    }
    e = kctl__queue_lookup(q, key, len, h, &created, &full);
    if (!e) {
        if (full) return kctl__queue_refuse(q);
        kctl__mutex_unlock(&q->mu);
        kctl__log(&q->logger, KCTL_LOG_ERROR, KCTL_LOGITEM_QUEUE_NOMEM);
        return KCTL_ERR_NOMEM;
    }
#endif
    if ((e->flags & KCTL__Q_DELAYED) && KCTL__QPEND(q)) kctl__queue_cancel_after(q, e);
#if KCTL_SMALL
    kctl__queue_add_entry(q, e, now);
    kctl__mutex_unlock(&q->mu);
#else
    {   /* the signal after the unlock: a worker woken under the lock would
           wake only to wait for it (two more futex calls per key) */
        uint32_t n;
        q->hold_wakes = true;
        kctl__queue_add_entry(q, e, now);
        q->hold_wakes = false;
        n = q->to_wake;
        q->to_wake = 0;
        kctl__mutex_unlock(&q->mu);
        while (n--) kctl__cond_signal(&q->work_cv);
    }
#endif
    return KCTL_OK;
}

#if KCTL__INF_BATCH
/* kctl__queue_add_hashed of n objects' keys in one hold of the lock (a
   controller's keys from an informer's batch: one lock hand-off and one
   run of wake-ups for up to KCTL__QUEUE_BATCH keys, not one per key);
   the same order, the same counts and logs as n adds. Returns SHUTDOWN
   (nothing added), NOMEM if a key could not be added for memory, FULL
   if max_keys refused one, else OK. */
static int kctl__queue_add_objs(kctl_queue *q, kctl_obj *const *objs, uint32_t n) {
    uint64_t now = KCTL__QTIMED(q) ? kctl__queue_now(q) : 0;
    uint32_t i, wake, refused = 0, nomem = 0;
    kctl__mutex_lock(&q->mu);
    if (q->shutting_down) {
        kctl__mutex_unlock(&q->mu);
        return KCTL_ERR_SHUTDOWN;
    }
    if (q->nheap) {
        if (!KCTL__QTIMED(q) || !q->real_clock) now = kctl__queue_now(q);
        kctl__queue_promote(q, now);
    }
    q->hold_wakes = true;
    for (i = 0; i < n; i++) {
        const kctl__node *k = &objs[i]->node;
        bool created, full;
        kctl__qent *e = kctl__queue_lookup(q, k->key, k->len, k->hash, &created, &full);
        if (!e) {
            if (!full) {
                nomem++;
            } else {
                q->refused++;
                refused++;
            }
            continue;
        }
        if ((e->flags & KCTL__Q_DELAYED) && KCTL__QPEND(q)) kctl__queue_cancel_after(q, e);
        kctl__queue_add_entry(q, e, now);
    }
    q->hold_wakes = false;
    wake = q->to_wake;
    q->to_wake = 0;
    kctl__mutex_unlock(&q->mu);
    while (wake--) kctl__cond_signal(&q->work_cv);
    for (i = 0; i < refused; i++) kctl__log(&q->logger, KCTL_LOG_WARN, KCTL_LOGITEM_QUEUE_FULL);
    for (i = 0; i < nomem; i++) kctl__log(&q->logger, KCTL_LOG_ERROR, KCTL_LOGITEM_QUEUE_NOMEM);
    return nomem ? KCTL_ERR_NOMEM : refused ? KCTL_ERR_FULL : KCTL_OK;
}
#endif

KCTL_API int kctl_queue_add(kctl_queue *q, const char *key) {
    size_t len = kctl__key_len(key);
    if (!q || !len) return KCTL_ERR_INVALID_ARG;
    return kctl__queue_add_hashed(q, key, len, kctl__hash(key, len));
}

KCTL_API int kctl_queue_add_low(kctl_queue *q, const char *key) {
    size_t len = kctl__key_len(key);
    uint64_t now = 0;
    kctl__qent *e;
    bool created;
    int rc;
    if (!q || !len) return KCTL_ERR_INVALID_ARG;
    if (!KCTL__QPRIO(q)) return kctl_queue_add(q, key);
    /* the time under the lock: the low list stays in time order */
    if (!(e = kctl__queue_enter(q, key, len, kctl__hash(key, len), false, true, &now, &created, &rc))) return rc;
    if ((e->flags & KCTL__Q_DELAYED) && KCTL__QPEND(q)) kctl__queue_cancel_after(q, e);
    kctl__queue_add_low_entry(q, e, now);
    kctl__mutex_unlock(&q->mu);
    return KCTL_OK;
}

KCTL_API int kctl_queue_add_after(kctl_queue *q, const char *key, uint64_t delay_ns) {
    size_t len = kctl__key_len(key);
    uint64_t now = 0;
    kctl__qent *e;
    bool created;
    int rc;
    if (!q || !len) return KCTL_ERR_INVALID_ARG;
    /* A virtual clock is read under the lock: an advance that slips in
       between must not leave a key due in the past unseen. */
    if (q->real_clock) now = kctl__queue_now(q);
    if (!(e = kctl__queue_enter(q, key, len, kctl__hash(key, len), q->real_clock, true, &now, &created, &rc))) return rc;
    if (delay_ns && !(e->flags & KCTL__Q_DELAYED) && kctl__heap_reserve(q) != KCTL_OK) {
        if (created) kctl__queue_retire(q, e);
        kctl__mutex_unlock(&q->mu);
        kctl__log(&q->logger, KCTL_LOG_ERROR, KCTL_LOGITEM_QUEUE_NOMEM);
        return KCTL_ERR_NOMEM;
    }
    q->retries++; /* client-go counts every AddAfter, delayed or not */
    if (delay_ns == 0) {
        if ((e->flags & KCTL__Q_DELAYED) && KCTL__QPEND(q)) kctl__queue_cancel_after(q, e);
        kctl__queue_add_entry(q, e, now);
    } else if ((e->flags & KCTL__Q_DIRTY) && KCTL__QPEND(q) == KCTL_PENDING_MERGE) {
        q->cancelled++; /* it waits to be handed out: it runs sooner than this */
    } else {
        uint64_t at = kctl__add_sat(now, delay_ns);
        kctl__qcold *c = kctl__cold(e);
        if (!(e->flags & KCTL__Q_DELAYED)) {
            e->flags |= KCTL__Q_DELAYED;
            c->ready_ns = at;
            c->seq = q->seq++;
            kctl__heap_set(q, q->nheap++, e);
            kctl__heap_up(q, c->heap_idx);
        } else if (at < c->ready_ns) { /* the earlier time wins, a later never postpones */
            c->ready_ns = at;
            kctl__heap_up(q, c->heap_idx);
        }
        /* A worker parked until a later time must recompute its deadline. */
        if (KCTL__Q_PARKS && q->sleepers && q->real_clock && kctl__heap_first(q) == e) kctl__cond_signal(&q->work_cv);
    }
    kctl__mutex_unlock(&q->mu);
    return KCTL_OK;
}

KCTL_API int kctl_queue_add_rate_limited(kctl_queue *q, const char *key) {
    if (!q || !kctl__key_len(key)) return KCTL_ERR_INVALID_ARG;
    if (kctl_queue_shutting_down(q)) return KCTL_ERR_SHUTDOWN; /* do not charge the limiter */
    return kctl_queue_add_after(q, key, kctl_limiter_when(q->limiter, key));
}

KCTL_API void kctl_queue_forget(kctl_queue *q, const char *key) {
    if (q) kctl_limiter_forget(q->limiter, key);
}

KCTL_API uint32_t kctl_queue_num_requeues(kctl_queue *q, const char *key) {
    return q ? kctl_limiter_num_requeues(q->limiter, key) : 0;
}

/* client-go's Done on key, lock held: false if key is not being
   processed (the caller logs it, after unlocking). owner (1-based):
   the done of the key in that worker's slot, which key must be (a
   worker's own keys are done by it alone); 0: key is found by pointer
   among the first in-flight entries (usually the pointer get handed
   out), else by looking the string up, and is not OWNED. */
static bool kctl__queue_done_locked(kctl_queue *q, const char *key, uint64_t now, uint32_t owner) {
    kctl__qent *e;
    if (KCTL__Q_OWNERS && owner) {
        kctl__qowner *o = &q->owners[owner - 1];
        if (!(e = o->e) || kctl__qkey(e) != key) return false;
        o->e = NULL;
    } else {
#if KCTL__Q_FAST
        int n;
        for (e = q->inflight.pnext, n = 0; e != &q->inflight && kctl__qkey(e) != key && n < KCTL__QUEUE_INFLIGHT_SCAN;
             e = e->pnext, n++) { }
        if (e == &q->inflight || kctl__qkey(e) != key)
#endif
        {
            size_t len = kctl__key_len(key);
            e = len ? (kctl__qent *)kctl__map_find(&q->map, key, len, kctl__hash(key, len)) : NULL;
        }
        if (!e || (e->flags & (KCTL__Q_PROCESSING | KCTL__Q_OWNED)) != KCTL__Q_PROCESSING) return false; /* OWNED: its worker's */
        kctl__list_unlink(e);
    }
    if (KCTL__QTIMED(q)) {
        uint64_t started = kctl__cold(e)->started_ns;
        kctl__hist_observe(&q->work_hist, now >= started ? now - started : 0);
    }
    e->flags &= ~(uint32_t)(KCTL__Q_PROCESSING | KCTL__Q_OWNED);
    q->nprocessing--;
    if (e->flags & KCTL__Q_DIRTY) { /* added while processing: queue it now */
        if (KCTL__Q_PRIO && (e->flags & KCTL__Q_LOW)) kctl__queue_push_low(q, e, kctl__queue_now(q));
        else kctl__queue_push_ready(q, e);
    } else if (!KCTL__Q_FAST) {
        kctl__queue_retire(q, e); /* idle: out of the map now, to the free list */
    } else if (!(e->flags & (KCTL__Q_ROLES | KCTL__Q_LISTED))) {
        e->flags |= KCTL__Q_LISTED; /* (a LISTED one, revived and done again, is on the stack yet) */
        e->rnext = q->rstack;
        q->rstack = e;
        if (++q->nreturned >= KCTL__QUEUE_RETURNED_MAX || (KCTL__QMAX(q) && q->nreturned >= q->max_keys))
            kctl__queue_recycle(q); /* no producer took them */
    }
    if (!q->nprocessing && q->drainers) kctl__cond_broadcast(&q->idle_cv);
    return true;
}

/* Hand out the head of the FIFO; owner (1-based): to that worker, into
   its slot (0: onto the in-flight list). A key revived while idle may be
   on the returned stack yet: LISTED stays, and the recycling leaves it
   there. Lock held, FIFO not empty. */
static const char *kctl__queue_take(kctl_queue *q, uint64_t now, uint32_t owner) {
    kctl__qent *e = q->head;
    q->head = e->next;
    if (!q->head) q->tail = NULL;
    else KCTL__Q_PREFETCH(q->head); /* with a backlog the next entry is cold */
    q->nready--;
    e->next = NULL;
    e->flags = (e->flags & ~(uint32_t)(KCTL__Q_QUEUED | KCTL__Q_DIRTY)) | KCTL__Q_PROCESSING;
    if (KCTL__QTIMED(q)) {
        kctl__qcold *c = kctl__cold(e);
        c->started_ns = now;
        kctl__hist_observe(&q->queue_hist, now >= c->added_ns ? now - c->added_ns : 0);
    }
    q->nprocessing++;
    if (KCTL__Q_OWNERS && owner) {
        e->flags |= KCTL__Q_OWNED;
        q->owners[owner - 1].e = e;
    } else {
        kctl__list_append(&q->inflight, e);
        /* Its done may look for its slot: with a backlog the table is
           cold there too (a deep queue's done waited on that miss more
           than on anything else). */
        kctl__map_prefetch(&q->map, e->node.hash);
    }
    return kctl__qkey(e);
}

/* get (block) or try_get; with a done_key, done(done_key) first in the
   same hold of the lock: a worker's loop takes the lock once per key for
   both (the controller's workers). *stopping (may be NULL) gets whether
   the queue was shutting down when the key was handed out. owner
   (1-based, at most nowners; 0: none): the caller is that controller's
   worker (kctl__queue_owners), whose done_key is always the key this
   call handed it last (or NULL): its key is OWNED, kept in its slot,
   done from there, and done by no other call. */
static int kctl__queue_get(kctl_queue *q, const char *done_key, const char **key, bool block, bool *stopping, uint32_t owner) {
#ifdef KCTL__HINTS
    bool spun = false; /* one spin per empty look, then park */
#endif
    uint64_t now = 0, trim_ns;
    bool fresh = false; /* now was read since the lock was last taken */
    bool bad_done = false;
    int rc;
    if (!q || !key) {
        if (q && done_key) {
            if (!KCTL__Q_OWNERS || !owner) {
                kctl_queue_done(q, done_key);
            } else {
                kctl__mutex_lock(&q->mu);
                bad_done = !kctl__queue_done_locked(q, done_key, KCTL__QTIMED(q) ? kctl__queue_now(q) : 0, owner);
                kctl__mutex_unlock(&q->mu);
                if (bad_done) kctl__log(&q->logger, KCTL_LOG_WARN, KCTL_LOGITEM_QUEUE_DONE_NOT_PROCESSING);
            }
        }
        return KCTL_ERR_INVALID_ARG;
    }
    /* A real clock may be read before locking, which keeps the critical
       section short; a virtual one is read under the lock, so an advance
       cannot slip between the read and the wait. */
    if (KCTL__QTIMED(q) && q->real_clock) { now = kctl__queue_now(q); fresh = true; }
    kctl__mutex_lock(&q->mu);
    if (done_key) {
        if (KCTL__QTIMED(q) && !fresh) now = kctl__queue_now(q);
        bad_done = !kctl__queue_done_locked(q, done_key, now, owner);
    }
    if (KCTL__Q_OWNERS && owner && q->owners[owner - 1].e) /* its key is not done (a done of another key): */
        rc = KCTL_ERR_INVALID_ARG;                          /* no second one, its slot stays */
    else for (;;) {
        if (!fresh && (q->nheap || KCTL__QTIMED(q))) now = kctl__queue_now(q);
        if (q->nheap) kctl__queue_promote(q, now);
        if (q->head || (KCTL__Q_PRIO && q->nlow)) {
            if (KCTL__QPRIO(q)) kctl__queue_pick_prio(q);
            *key = kctl__queue_take(q, now, owner);
            if (stopping) *stopping = q->shutting_down;
            rc = KCTL_OK;
            break;
        }
        if (q->shutting_down) {
            rc = KCTL_ERR_SHUTDOWN;
            break;
        }
#ifdef KCTL_NO_THREADS
        block = false;
#endif
        if (!block) {
            (void)kctl__queue_trim(q); /* nothing to hand out: the time to give back a burst's table */
            rc = KCTL_ERR_AGAIN;
            break;
        }
        fresh = false;
#ifdef KCTL__HINTS
        /* At most one spinner fewer than the CPUs: with every CPU held
           by a spinner, the producer they wait for would wait for a
           spinner's slice. */
        if (!spun && q->spinners < q->max_spinners && kctl__spin_begin(&q->spin)) {
            /* A producer that keeps up refills within a microsecond: wait
               for its next push without a futex round trip (the policy
               in PLATFORM says when, and bounds it by time). */
            unsigned seen = KCTL__LOAD(&q->pushes);
            uint64_t budget = q->spin.budget_ns;
            bool pushed;
            q->spinners++;
            kctl__mutex_unlock(&q->mu);
            pushed = kctl__spin_until(&q->pushes, seen, budget, kctl__spin_clock, NULL);
            if (pushed && KCTL_QUEUE_LINGER > 0) { /* let a busy producer queue more: fewer lock hand-offs */
                uint64_t end = kctl__spin_clock(NULL) + KCTL_QUEUE_LINGER;
                do kctl__cpu_relax(); while (kctl__spin_clock(NULL) < end);
            }
            kctl__mutex_lock(&q->mu);
            q->spinners--;
            /* It paid off if there is work to take now (or the end). */
            kctl__spin_end(&q->spin, pushed && (q->head || q->nheap || q->shutting_down));
            spun = true;
            continue;
        }
        /* A queue made on one CPU does not spin until a worker that may
           run on another waits: ask the CPUs of the first parkers, then
           now and then (a system call, beside a futex wait). */
        if (!q->spin.budget_ns && q->cpu_mask && (q->parks < 16 || (q->parks & 255u) == 0)) {
            uint32_t n = 0;
            uint64_t m;
            kctl__spin_widen(&q->spin, &q->cpu_mask, kctl__cpu_mask(), KCTL_QUEUE_SPIN);
            if (q->spin.budget_ns) kctl__mutex_spin_widen(&q->mu); /* its lock's waiters too */
            for (m = q->cpu_mask; m; m &= m - 1) n++;
            if (n > q->max_spinners + 1) q->max_spinners = n - 1;
        }
        q->parks++;
#endif
        trim_ns = kctl__queue_trim(q); /* parking (not each spin): a clock read beside a futex wait */
        q->sleepers++;
        if (q->real_clock && (q->nheap || trim_ns)) { /* (a virtual clock's advance wakes the parked) */
            uint64_t wait = q->nheap ? (kctl__heap_top_ns(q) > now ? kctl__heap_top_ns(q) - now : 0) : trim_ns;
            kctl__cond_wait_for(&q->work_cv, &q->mu, trim_ns && trim_ns < wait ? trim_ns : wait);
        } else
            kctl__cond_wait(&q->work_cv, &q->mu);
        q->sleepers--;
        if (q->wakes) q->wakes--; /* (a timed-out wait may take another's: then one signal more, never one less) */
#ifdef KCTL__HINTS
        spun = false;
#endif
    }
    kctl__mutex_unlock(&q->mu);
    if (bad_done) kctl__log(&q->logger, KCTL_LOG_WARN, KCTL_LOGITEM_QUEUE_DONE_NOT_PROCESSING);
    return rc;
}

KCTL_API int kctl_queue_get(kctl_queue *q, const char **key) { return kctl__queue_get(q, NULL, key, true, NULL, 0); }
KCTL_API int kctl_queue_try_get(kctl_queue *q, const char **key) { return kctl__queue_get(q, NULL, key, false, NULL, 0); }
#if defined(KCTL__SPIN_TEST) && !defined(KCTL_NO_THREADS) && (defined(__GNUC__) || defined(__clang__))
KCTL_API int kctl__queue_done_get_test(kctl_queue *q, const char *done_key, const char **key, bool *stopping, uint32_t owner) {
    if (q && owner > q->nowners) return KCTL_ERR_INVALID_ARG;
    return kctl__queue_get(q, done_key, key, false, stopping, owner);
}
KCTL_API int kctl__queue_owners_test(kctl_queue *q, uint32_t n) {
    return !q || q->nowners ? KCTL_ERR_INVALID_ARG : kctl__queue_owners(q, n);
}
#endif

KCTL_API void kctl_queue_done(kctl_queue *q, const char *key) {
    uint64_t now;
    bool found;
    if (!q || !key) return;
    now = KCTL__QTIMED(q) ? kctl__queue_now(q) : 0;
    kctl__mutex_lock(&q->mu);
    found = kctl__queue_done_locked(q, key, now, 0);
    kctl__mutex_unlock(&q->mu);
    if (!found) kctl__log(&q->logger, KCTL_LOG_WARN, KCTL_LOGITEM_QUEUE_DONE_NOT_PROCESSING);
}

KCTL_API size_t kctl_queue_len(kctl_queue *q) {
    size_t n;
    if (!q) return 0;
    kctl__mutex_lock(&q->mu);
    if (q->nheap) kctl__queue_promote(q, kctl__queue_now(q));
    n = q->nready;
    kctl__mutex_unlock(&q->mu);
    return n;
}

/* kctl_queue_next_ready; trim: with nothing ready, give back a grown
   table whose time has come, and fold in when the next one's will (a
   poll loop's deadline, kctl__ctl_due: a queue stepped from a main loop
   shrinks as a parked worker's does). */
static uint64_t kctl__queue_due(kctl_queue *q, bool trim) {
    uint64_t t = UINT64_MAX, ns;
    kctl__mutex_lock(&q->mu);
    if (q->nheap) kctl__queue_promote(q, kctl__queue_now(q));
    if (q->head || (KCTL__Q_PRIO && q->nlow)) t = 0;
    else if (q->nheap) t = kctl__heap_top_ns(q);
    if (trim && t && (ns = kctl__queue_trim(q)) != 0) {
        ns = kctl__add_sat(kctl__queue_now(q), ns);
        if (ns < t) t = ns;
    }
    kctl__mutex_unlock(&q->mu);
    return t;
}

KCTL_API uint64_t kctl_queue_next_ready(kctl_queue *q) { return q ? kctl__queue_due(q, false) : UINT64_MAX; }

KCTL_API void kctl_queue_shutdown(kctl_queue *q) {
    if (!q) return;
    kctl__mutex_lock(&q->mu);
    if (!q->shutting_down) {
        /* Keys whose time has come were added then: they stay. */
        if (q->nheap) kctl__queue_promote(q, kctl__queue_now(q));
        q->shutting_down = true;
        while (q->nheap) { /* delayed keys not yet ready are dropped */
            kctl__qent *e = q->heap[--q->nheap];
            e->flags &= ~(uint32_t)KCTL__Q_DELAYED;
            kctl__queue_retire(q, e);
        }
        kctl__queue_bump(q);
    }
    kctl__cond_broadcast(&q->work_cv);
    kctl__mutex_unlock(&q->mu);
}

KCTL_API void kctl_queue_shutdown_with_drain(kctl_queue *q) {
    if (!q) return;
    kctl_queue_shutdown(q);
#ifndef KCTL_NO_THREADS
    kctl__mutex_lock(&q->mu);
    q->drainers++;
    while (q->nprocessing) kctl__cond_wait(&q->idle_cv, &q->mu);
    q->drainers--;
    kctl__mutex_unlock(&q->mu);
#endif
}

KCTL_API bool kctl_queue_shutting_down(kctl_queue *q) {
    bool s;
    if (!q) return true;
    kctl__mutex_lock(&q->mu);
    s = q->shutting_down;
    kctl__mutex_unlock(&q->mu);
    return s;
}

/* Count e, in flight, in depth if it was added again meanwhile (held
   back: dirty, and not among the ready keys), and (timed) in
   unfinished_work_ns and longest_running_ns. */
static void kctl__queue_age(const kctl_queue *q, kctl_queue_stats *out, const kctl__qent *e, uint64_t now) {
    uint64_t started, age;
    if (e->flags & KCTL__Q_DIRTY) out->depth++;
    if (!KCTL__QTIMED(q)) return;
    started = kctl__cold(e)->started_ns;
    age = now >= started ? now - started : 0;
    out->unfinished_work_ns = kctl__add_sat(out->unfinished_work_ns, age);
    if (age > out->longest_running_ns) out->longest_running_ns = age;
}

KCTL_API int kctl_queue_read_stats(kctl_queue *q, kctl_queue_stats *out) {
    const kctl__qent *e;
    uint64_t now;
    uint32_t o;
    int i;
    if (!q || !out) return KCTL_ERR_INVALID_ARG;
    memset(out, 0, sizeof *out);
    kctl__mutex_lock(&q->mu);
    now = kctl__queue_now(q);
    if (q->nheap) kctl__queue_promote(q, now);
    out->depth = q->nready; /* and the keys held back, below */
    out->adds_total = q->adds;
    out->retries_total = q->retries;
    out->queue_duration = q->queue_hist;
    out->work_duration = q->work_hist;
    for (e = q->inflight.pnext; e != &q->inflight; e = e->pnext) kctl__queue_age(q, out, e, now);
    for (o = 0; KCTL__Q_OWNERS && o < q->nowners; o++)
        if (q->owners[o].e) kctl__queue_age(q, out, q->owners[o].e, now);
    out->processing = q->nprocessing;
    out->delayed = q->nheap;
    out->idle_workers = q->sleepers;
    out->name = q->name;
    out->refused_total = q->refused;
    out->low = q->nlow;
    out->cancelled_total = q->cancelled;
    kctl__mutex_unlock(&q->mu);
    for (i = 1; i < KCTL_HIST_BUCKETS; i++) { /* cumulative, as Prometheus counts them */
        out->queue_duration.buckets[i] += out->queue_duration.buckets[i - 1];
        out->work_duration.buckets[i] += out->work_duration.buckets[i - 1];
    }
    return KCTL_OK;
}

/* ------------------------------------------------- >>predicate PREDICATES */
/* An object's labels or annotations, through the same three calls. */
typedef struct kctl__pred_map {
    size_t (*count)(const kctl_obj *o);
    bool (*at)(const kctl_obj *o, size_t i, const char **key, const char **value);
    const char *(*get)(const kctl_obj *o, const char *key);
} kctl__pred_map;

static const kctl__pred_map kctl__pred_maps[2] = {
    { kctl_obj_label_count, kctl_obj_label_at, kctl_obj_label },
    { kctl_obj_annotation_count, kctl_obj_annotation_at, kctl_obj_annotation }
};

/* Whether two objects' label (or annotation) maps differ. */
static bool kctl__pred_maps_differ(const kctl_obj *a, const kctl_obj *b, const kctl__pred_map *m) {
    size_t i, n = m->count(a);
    if (n != m->count(b)) return true;
    for (i = 0; i < n; i++) {
        const char *k = "", *v = "", *w;
        m->at(a, i, &k, &v);
        w = m->get(b, k);
        if (!w || kctl__strcmp(v, w) != 0) return true;
    }
    return false;
}

KCTL_API bool kctl_predicate_eval(const kctl_predicate *p, const kctl_obj *old_obj, const kctl_obj *new_obj) {
    if (!p) return true;
    switch (p->kind) {
    case KCTL_PRED_CUSTOM: return !p->fn || p->fn(old_obj, new_obj, p->user_data);
    case KCTL_PRED_AND: return kctl_predicate_eval(p->a, old_obj, new_obj) && kctl_predicate_eval(p->b, old_obj, new_obj);
    case KCTL_PRED_OR: return kctl_predicate_eval(p->a, old_obj, new_obj) || kctl_predicate_eval(p->b, old_obj, new_obj);
    case KCTL_PRED_NOT: return !kctl_predicate_eval(p->a, old_obj, new_obj);
    default: break;
    }
    if (!old_obj || !new_obj) return true; /* the "changed" kinds pass adds and deletes */
    switch (p->kind) {
    case KCTL_PRED_GENERATION_CHANGED: return kctl_obj_generation(old_obj) != kctl_obj_generation(new_obj);
    case KCTL_PRED_RESOURCE_VERSION_CHANGED:
        return kctl__strcmp(kctl_obj_resource_version(old_obj), kctl_obj_resource_version(new_obj)) != 0;
    case KCTL_PRED_LABELS_CHANGED:
    case KCTL_PRED_ANNOTATIONS_CHANGED:
        return kctl__pred_maps_differ(old_obj, new_obj, &kctl__pred_maps[p->kind - KCTL_PRED_LABELS_CHANGED]);
    default: return true;
    }
}


/* ------------------------------------------------ >>controller CONTROLLER */
/* The controller's trim switches (COMPILE-TIME OPTIONS): 1 where the part
   is compiled in. The per-key record serves hold_backoff and hot_loop. */
#ifdef KCTL_NO_OFFLINE
#define KCTL__CTL_OFFLINE 0
#else
#define KCTL__CTL_OFFLINE 1
#endif
#ifdef KCTL_NO_HOLD_BACKOFF
#define KCTL__CTL_HOLD 0
#else
#define KCTL__CTL_HOLD 1
#endif
#ifdef KCTL_NO_HOT_LOOP
#define KCTL__CTL_HOT 0
#else
#define KCTL__CTL_HOT 1
#endif
#define KCTL__CTL_KEYRECS (KCTL__CTL_HOLD || KCTL__CTL_HOT)
#ifdef KCTL_NO_PREDICATES /* no watch has a predicate: the evaluator is not linked */
#define KCTL__CTL_PRED 0
#else
#define KCTL__CTL_PRED 1
#endif

/* A worker's counters (kctl_controller_stats' reconcile counts and
   reconcile_time), under a lock of its own, a line of their own in fast
   builds: a reconcile counts itself without writing a line that another
   worker writes, and kctl_controller_read_stats adds them up. */
typedef struct kctl__ctlcount {
    kctl__mutex mu;
    kctl_controller_stats s; /* (only the reconcile counts and reconcile_time) */
} kctl__ctlcount;

/* A watch is its informer handler's user_data, so it never moves: each is
   allocated on its own (the owner's group and kind follow it) and pushed
   at the head of the controller's list, whose nodes never change after:
   start walks them without the lock. Its kind is what an event enqueues
   (on: the primary's, an owner's, a map's), a function pointer rather
   than a switch, so that the owner and map code links only into programs
   that call watch_owned or watch_map. */
struct kctl__ctlwatch;
typedef void (*kctl__ctl_on_fn)(struct kctl__ctlwatch *w, const kctl_obj *obj, const char *key);
typedef struct kctl__ctlwatch {
    struct kctl__ctlwatch *next;
    kctl_controller *c;
    kctl_informer *inf;
    kctl__ctl_on_fn on;
    const char *group, *owner_kind; /* owned: the owner's (copies) */
    kctl_map_fn map;
    void *user_data;
    kctl_predicate pred;
    bool has_pred;
#if KCTL__INF_BATCH
    /* (the informer's thread) primary keys of its batch not yet added:
       their objects, held; added together at KCTL__QUEUE_BATCH of them,
       at the first 8th key KCTL__QUEUE_BATCH_NS after the first, at an
       add of another kind, or at the batch's end */
    uint32_t nstash;
    uint64_t stash_at;
    kctl_obj *stash[KCTL__QUEUE_BATCH];
#endif
} kctl__ctlwatch;

struct kctl_controller {
    kctl_queue *q;
    kctl_informer *primary;
    kctl_transport transport;
    kctl_reconcile_fn reconcile;
    void *user_data;
    uint32_t workers;
    kctl_logger logger;
    kctl_allocator allocator;
    kctl_clock clock;
    kctl__mutex mu; /* stats, watches, running */
    kctl_controller_stats stats;
    kctl__ctlwatch *watches; /* newest first */
    bool running;
    /* offline mode (under mu): the parked keys (each a kctl__node, its
       key after it), the probe in flight (such a node, out of the map, or
       NULL), the next probe's ceiling, the jitter's state */
    kctl_offline_desc off;
    kctl__map parked;
    kctl__node *probe;
    uint64_t probe_ns, rng;
    bool prio;              /* kctl_controller_desc.priority.enabled: list and resync events low */
    /* hold_backoff, hot_loop (under mu): a kctl__keyrec per key reconciled */
    bool hold_backoff;
    kctl_hot_loop_desc hot;
    kctl__map keyrecs;
#ifndef KCTL_NO_THREADS
    kctl__cond cv;          /* a worker ended */
    kctl__thread *threads;  /* room for workers threads, made at create */
    uint32_t nthreads;      /* started and not joined yet */
    uint32_t owners;        /* the queue's worker slots the running workers took (kctl__queue_owners) */
    void *counts;           /* workers kctl__ctlcount, each at a multiple of count_size from counts_at */
    unsigned char *counts_at;
    size_t count_size;
    uint32_t live;          /* of those, still running */
#endif
};

/* Queue key for an event of w's informer: low when priority is on and the
   event comes from a list or a resync. [the informer's thread] */
static void kctl__ctl_add(const kctl__ctlwatch *w, const char *key) {
    kctl_controller *c = w->c;
    int rc = KCTL__Q_PRIO && c->prio && w->inf->from_list ? kctl_queue_add_low(c->q, key) : kctl_queue_add(c->q, key);
    /* FULL: the queue logged and counted it; the next resync finds the key */
    if (rc != KCTL_OK && rc != KCTL_ERR_SHUTDOWN && rc != KCTL_ERR_FULL)
        kctl__log(&c->logger, KCTL_LOG_ERROR, KCTL_LOGITEM_CONTROLLER_ENQUEUE_FAILED);
}

static void kctl__ctl_emit(const char *key, void *ctx) {
    if (key && *key) kctl__ctl_add((const kctl__ctlwatch *)ctx, key);
}

/* controller-runtime's EnqueueRequestForOwner (OnlyControllerOwner): the
   controller ref, if its group (from apiVersion, as ParseGroupVersion reads
   it; the version does not matter) and kind are the watch's, names the
   owner, in the object's namespace. */
static void kctl__ctl_owner(kctl__ctlwatch *w, const kctl_obj *obj) {
    const kctl_owner_ref *ref = kctl_obj_controller_ref(obj);
    const char *ns = kctl_obj_namespace(obj), *av, *slash;
    char buf[256], *key = buf;
    size_t glen, nslen, nlen;
    if (!ref || !ref->name || !ref->name[0] || !ref->kind || kctl__strcmp(ref->kind, w->owner_kind) != 0) return;
    av = ref->api_version ? ref->api_version : "";
    slash = kctl__strchr(av, '/'); /* "group/version"; "version": the core group "" */
    if (slash && kctl__strchr(slash + 1, '/')) return; /* not an apiVersion: matches nothing */
    glen = slash ? (size_t)(slash - av) : 0;
    if (glen != kctl__strlen(w->group) || kctl__memcmp(av, w->group, glen) != 0) return;
    nslen = kctl__strlen(ns);
    nlen = kctl__strlen(ref->name);
    if (nslen + nlen + 2 > sizeof buf && !(key = (char *)kctl__alloc(&w->c->allocator, nslen + nlen + 2))) {
        kctl__log(&w->c->logger, KCTL_LOG_ERROR, KCTL_LOGITEM_CONTROLLER_ENQUEUE_FAILED);
        return;
    }
    kctl__memcpy(key, ns, nslen);
    if (nslen) key[nslen++] = '/';
    kctl__memcpy(key + nslen, ref->name, nlen + 1);
    kctl__ctl_add(w, key); /* a key past KCTL_MAX_KEY_LEN is refused and logged */
    if (key != buf) kctl__free(&w->c->allocator, key);
}

#if KCTL__INF_BATCH
/* Add the held keys (the controller's log for those lost to memory, as
   kctl__ctl_add's), let their objects go. */
static void kctl__ctl_unstash(kctl__ctlwatch *w) {
    uint32_t i, n = w->nstash;
    if (!n) return;
    w->nstash = 0;
    if (kctl__queue_add_objs(w->c->q, w->stash, n) == KCTL_ERR_NOMEM)
        kctl__log(&w->c->logger, KCTL_LOG_ERROR, KCTL_LOGITEM_CONTROLLER_ENQUEUE_FAILED);
    for (i = 0; i < n; i++) kctl_obj_unref(w->stash[i]);
}
#endif

/* What an event enqueues: the primary's own key (the delete's key, else
   the object's), the owner's (watch_owned), the map's keys (watch_map). */
static void kctl__ctl_on_primary(kctl__ctlwatch *w, const kctl_obj *obj, const char *key) {
#if !KCTL_SMALL
    if (!key && obj && obj->node.len && obj->node.len <= KCTL_MAX_KEY_LEN && !(w->c->prio && w->inf->from_list)) {
        /* the object's key, its length and hash known: a plain add without counting or hashing it again */
        int rc;
#if KCTL__INF_BATCH
        if (w->inf->batching) { /* held for a run of adds under one lock */
            if (!w->nstash) w->stash_at = (uint64_t)KCTL_PORT_NOW_NS();
            kctl__map_prefetch(&w->c->q->map, obj->node.hash); /* its slot, by the time the run is added */
            w->stash[w->nstash++] = kctl_obj_ref((kctl_obj *)(uintptr_t)obj);
            /* the clock read every 8 keys, not each (a clock read was a
               twentieth of the informer's thread with a backlog) */
            if (w->nstash == KCTL__QUEUE_BATCH ||
                (!(w->nstash & 7u) && (uint64_t)KCTL_PORT_NOW_NS() - w->stash_at >= KCTL__QUEUE_BATCH_NS))
                kctl__ctl_unstash(w);
            return;
        }
#endif
        rc = kctl__queue_add_hashed(w->c->q, obj->node.key, obj->node.len, obj->node.hash);
        if (rc != KCTL_OK && rc != KCTL_ERR_SHUTDOWN && rc != KCTL_ERR_FULL)
            kctl__log(&w->c->logger, KCTL_LOG_ERROR, KCTL_LOGITEM_CONTROLLER_ENQUEUE_FAILED);
        return;
    }
#endif
#if KCTL__INF_BATCH
    kctl__ctl_unstash(w); /* the held keys first: the queue takes keys in the events' order */
#endif
    kctl__ctl_add(w, key ? key : kctl_obj_key(obj));
}
static void kctl__ctl_on_owned(kctl__ctlwatch *w, const kctl_obj *obj, const char *key) {
    (void)key;
    if (obj) kctl__ctl_owner(w, obj);
}
static void kctl__ctl_on_map(kctl__ctlwatch *w, const kctl_obj *obj, const char *key) {
    (void)key;
    if (obj) w->map(obj, kctl__ctl_emit, w, w->user_data);
}

static bool kctl__ctl_pass(const kctl__ctlwatch *w, const kctl_obj *old_obj, const kctl_obj *new_obj) {
    return !KCTL__CTL_PRED || !w->has_pred || kctl_predicate_eval(&w->pred, old_obj, new_obj);
}
static void kctl__ctl_add_ev(kctl_obj *obj, void *ud) {
    kctl__ctlwatch *w = (kctl__ctlwatch *)ud;
    if (kctl__ctl_pass(w, NULL, obj)) w->on(w, obj, NULL);
}
static void kctl__ctl_update_ev(kctl_obj *old_obj, kctl_obj *new_obj, void *ud) {
    kctl__ctlwatch *w = (kctl__ctlwatch *)ud;
    if (!kctl__ctl_pass(w, old_obj, new_obj)) return;
    w->on(w, new_obj, NULL);
    if (w->on != kctl__ctl_on_primary) w->on(w, old_obj, NULL); /* an owner or a mapping that changed: both sides */
}
#if KCTL__INF_BATCH
static void kctl__ctl_flush(void *ud) { kctl__ctl_unstash((kctl__ctlwatch *)ud); }
#endif
static void kctl__ctl_delete_ev(const char *key, kctl_obj *last, bool unknown, void *ud) {
    kctl__ctlwatch *w = (kctl__ctlwatch *)ud;
    (void)unknown;
    if (kctl__ctl_pass(w, last, NULL)) w->on(w, last, key);
}

/* A new watch of inf (not yet registered) with on, extra bytes after it
   (an owned watch's strings): NULL when out of memory. */
static kctl__ctlwatch *kctl__ctl_watch_new(kctl_controller *c, kctl_informer *inf, kctl__ctl_on_fn on, size_t extra,
                                           kctl_map_fn map, void *user_data, const kctl_predicate *pred) {
    kctl__ctlwatch *w = (kctl__ctlwatch *)kctl__alloc(&c->allocator, sizeof *w + extra);
    if (!w) return NULL;
    memset(w, 0, sizeof *w);
    w->c = c;
    w->inf = inf;
    w->on = on;
    w->map = map;
    w->user_data = user_data;
    if (KCTL__CTL_PRED && pred) { /* (none where compiled out: refused before) */
        w->pred = *pred;
        w->has_pred = true;
    }
    return w;
}

/* Register w (kctl__ctl_watch_new's; NULL: NOMEM) as a handler of its
   informer and push it on c's list; w is freed when that fails. */
static KCTL__SMALL_INLINE32 int kctl__ctl_watch_add(kctl_controller *c, kctl__ctlwatch *w) {
    kctl_informer *inf;
    kctl_handler h;
    int rc;
    if (!w) return KCTL_ERR_NOMEM;
    inf = w->inf;
    memset(&h, 0, sizeof h);
    h.on_add = kctl__ctl_add_ev;
    h.on_update = kctl__ctl_update_ev;
    h.on_delete = kctl__ctl_delete_ev;
    h.user_data = w;
    h.resync = kctl__inf_resyncs(inf); /* syncs exactly when the informer resyncs */
    if ((rc = kctl__inf_add_handler(inf, &h, kctl__ctl_flush)) != KCTL_OK) {
        kctl__free(&c->allocator, w);
        return rc;
    }
    kctl__mutex_lock(&c->mu);
    w->next = c->watches;
    c->watches = w;
    kctl__mutex_unlock(&c->mu);
    return KCTL_OK;
}

#ifndef KCTL_NO_THREADS
/* The workers' counters, their first n locks made. */
static void kctl__ctl_counts_free(kctl_controller *c, uint32_t n) {
    while (n-- > 0) kctl__mutex_deinit(&((kctl__ctlcount *)(void *)(c->counts_at + n * c->count_size))->mu);
    kctl__free(&c->allocator, c->counts);
    c->counts = NULL;
}

/* Counters for each of c's workers (zeroed), each on lines of its own in
   fast builds. NOMEM. */
static int kctl__ctl_counts_new(kctl_controller *c) {
    size_t line = KCTL_SMALL ? 8 : 64, bytes;
    uint32_t i;
    c->count_size = (sizeof(kctl__ctlcount) + line - 1) / line * line;
    bytes = (size_t)c->workers * c->count_size;
    if (bytes / c->count_size != c->workers || !(c->counts = kctl__alloc(&c->allocator, bytes + line - 1))) return KCTL_ERR_NOMEM;
    c->counts_at = (unsigned char *)(((uintptr_t)c->counts + line - 1) & ~(uintptr_t)(line - 1));
    memset(c->counts_at, 0, bytes);
    for (i = 0; i < c->workers; i++)
        if (kctl__mutex_init(&((kctl__ctlcount *)(void *)(c->counts_at + i * c->count_size))->mu) != KCTL_OK) {
            kctl__ctl_counts_free(c, i);
            return KCTL_ERR_NOMEM;
        }
    return KCTL_OK;
}
#endif

KCTL_API int kctl_controller_create(const kctl_controller_desc *desc, kctl_controller **out) {
    kctl_queue_desc qd;
    kctl_controller *c;
    int rc = KCTL_ERR_INVALID_ARG;
    if (out) *out = NULL;
    if (!out || !desc || !desc->primary || !desc->reconcile || (!desc->allocator.alloc_fn) != (!desc->allocator.free_fn))
        goto refused;
    rc = KCTL_ERR_UNSUPPORTED; /* a part compiled out (COMPILE-TIME OPTIONS) */
    if ((!KCTL__CTL_OFFLINE && desc->offline.enabled) || (!KCTL__CTL_HOLD && desc->hold_backoff) ||
        (!KCTL__CTL_HOT && desc->hot_loop.max) || (!KCTL__CTL_PRED && desc->predicate))
        goto refused;
    rc = KCTL_ERR_NOMEM;
    if (!(c = (kctl_controller *)kctl__alloc(&desc->allocator, sizeof *c))) {
    refused: /* the limiter is ours from the call on: freed here as the queue would */
        if (desc) kctl_limiter_destroy(desc->limiter);
        return rc;
    }
    memset(c, 0, sizeof *c);
    c->primary = desc->primary;
    c->transport = desc->transport;
    c->reconcile = desc->reconcile;
    c->user_data = desc->user_data;
#ifndef KCTL_NO_THREADS /* (the workers' threads) */
    c->workers = desc->workers ? desc->workers : 1;
#endif
    c->logger = desc->logger;
    c->allocator = desc->allocator;
#if KCTL__CTL_OFFLINE
    c->off = desc->offline;
    if (!c->off.probe_min_ns) c->off.probe_min_ns = KCTL_SEC(1);
    if (!c->off.probe_max_ns) c->off.probe_max_ns = KCTL_SEC(300);
    if (c->off.probe_max_ns < c->off.probe_min_ns) c->off.probe_max_ns = c->off.probe_min_ns;
    if (!c->off.ramp_ns) c->off.ramp_ns = KCTL_SEC(10);
    c->rng = c->off.seed ? c->off.seed : kctl__port_wall_ns() ^ (uint64_t)(uintptr_t)c;
#endif
#if KCTL__CTL_KEYRECS
    c->hold_backoff = desc->hold_backoff;
    c->hot = desc->hot_loop;
    if (!c->hot.window_ns) c->hot.window_ns = KCTL_SEC(60);
    if (!c->hot.slow_ns) c->hot.slow_ns = KCTL_SEC(30);
#endif
    memset(&qd, 0, sizeof qd); /* the queue's defaults for what is zero */
    qd.name = desc->name;
    qd.clock = desc->clock; /* none: the queue's default, the monotonic clock (copied back below) */
    qd.limiter = desc->limiter;
    qd.allocator = desc->allocator;
    qd.logger = desc->logger;
    qd.max_keys = desc->max_keys;
    qd.pending_after = desc->pending_after;
    qd.priority = desc->priority;
    c->prio = desc->priority.enabled;
    if ((rc = kctl_queue_create(&qd, &c->q)) != KCTL_OK) { /* it took the limiter */
        kctl__free(&c->allocator, c);
        return rc;
    }
    c->clock = c->q->clock;
    if (kctl__mutex_init(&c->mu) != KCTL_OK) {
        kctl_queue_destroy(c->q);
        kctl__free(&c->allocator, c);
        return KCTL_ERR_NOMEM;
    }
#ifndef KCTL_NO_THREADS
    if (kctl__cond_init(&c->cv) != KCTL_OK) {
        kctl__mutex_deinit(&c->mu);
        kctl_queue_destroy(c->q);
        kctl__free(&c->allocator, c);
        return KCTL_ERR_NOMEM;
    }
    {
        size_t bytes = (size_t)c->workers * sizeof *c->threads;
        if (bytes / sizeof *c->threads != c->workers || !(c->threads = (kctl__thread *)kctl__alloc(&c->allocator, bytes)) ||
            kctl__queue_owners(c->q, c->workers) != KCTL_OK || kctl__ctl_counts_new(c) != KCTL_OK) {
            kctl_controller_destroy(c);
            return KCTL_ERR_NOMEM;
        }
    }
#endif
    if ((rc = kctl__ctl_watch_add(c, kctl__ctl_watch_new(c, c->primary, kctl__ctl_on_primary, 0, NULL, NULL, desc->predicate))) != KCTL_OK) {
        kctl_controller_destroy(c);
        return rc;
    }
    *out = c;
    return KCTL_OK;
}

#if KCTL__CTL_OFFLINE
static void kctl__ctl_unpark_all(kctl_controller *c, bool release);
#endif

KCTL_API void kctl_controller_destroy(kctl_controller *c) {
    kctl__ctlwatch *w, *next;
    if (!c) return;
    kctl_controller_stop(c);
    kctl_queue_destroy(c->q);
#if KCTL__CTL_OFFLINE
    kctl__ctl_unpark_all(c, false);
    kctl__free(&c->allocator, c->parked.slots);
    kctl__free(&c->allocator, c->probe);
#endif
#if KCTL__CTL_KEYRECS
    {
        size_t i;
        for (i = 0; i < c->keyrecs.cap; i++) kctl__free(&c->allocator, c->keyrecs.slots[i].node);
        kctl__free(&c->allocator, c->keyrecs.slots);
    }
#endif
    for (w = c->watches; w; w = next) {
        next = w->next;
#if KCTL__INF_BATCH
        while (w->nstash) kctl_obj_unref(w->stash[--w->nstash]); /* (none: a batch ends with its flush) */
#endif
        kctl__free(&c->allocator, w);
    }
#ifndef KCTL_NO_THREADS
    kctl__free(&c->allocator, c->threads);
    kctl__ctl_counts_free(c, c->counts ? c->workers : 0);
    kctl__cond_deinit(&c->cv);
#endif
    kctl__mutex_deinit(&c->mu);
    kctl__free(&c->allocator, c);
}

KCTL_API int kctl_controller_watch_owned(kctl_controller *c, kctl_informer *inf, const char *owner_group,
                                         const char *owner_kind, const kctl_predicate *pred) {
    size_t glen, klen;
    kctl__ctlwatch *w;
    if (!c || !inf || !owner_kind || !*owner_kind) return KCTL_ERR_INVALID_ARG;
    if (!KCTL__CTL_PRED && pred) return KCTL_ERR_UNSUPPORTED;
    glen = owner_group ? kctl__strlen(owner_group) : 0;
    klen = kctl__strlen(owner_kind);
    if ((w = kctl__ctl_watch_new(c, inf, kctl__ctl_on_owned, glen + klen + 2, NULL, NULL, pred)) != NULL) {
        char *p = (char *)(w + 1); /* the strings follow the struct */
        if (glen) kctl__memcpy(p, owner_group, glen);
        p[glen] = '\0';
        kctl__memcpy(p + glen + 1, owner_kind, klen + 1);
        w->group = p;
        w->owner_kind = p + glen + 1;
    }
    return kctl__ctl_watch_add(c, w);
}

KCTL_API int kctl_controller_watch_map(kctl_controller *c, kctl_informer *inf, kctl_map_fn map, void *user_data, const kctl_predicate *pred) {
    if (!c || !inf || !map) return KCTL_ERR_INVALID_ARG;
    if (!KCTL__CTL_PRED && pred) return KCTL_ERR_UNSUPPORTED;
    return kctl__ctl_watch_add(c, kctl__ctl_watch_new(c, inf, kctl__ctl_on_map, 0, map, user_data, pred));
}

#if KCTL__CTL_OFFLINE
/* ---- offline mode (kctl_offline_desc); everything here runs under c->mu */

static bool kctl__ctl_unreachable(int rc) { return rc == KCTL_ERR_IO || rc == KCTL_ERR_TIMEOUT || rc == KCTL_ERR_AGAIN; }

/* Park key; false when out of memory (the caller then backs it off
   through the limiter, as without offline mode). */
static bool kctl__ctl_park(kctl_controller *c, const char *key) {
    size_t len = kctl__key_len(key);
    uint32_t h;
    kctl__node *n;
    if (!len) return false;
    h = kctl__hash(key, len);
    if (kctl__map_find(&c->parked, key, len, h)) return true;
    if (kctl__map_reserve(&c->parked, &c->allocator) != KCTL_OK || !(n = (kctl__node *)kctl__alloc(&c->allocator, sizeof *n + len + 1)))
        return false;
    kctl__memcpy(n + 1, key, len + 1);
    n->key = (const char *)(n + 1);
    n->len = (uint32_t)len;
    n->hash = h;
    kctl__map_insert(&c->parked, n);
    return true;
}

static void kctl__ctl_unpark(kctl_controller *c, const char *key) {
    size_t len = kctl__key_len(key);
    kctl__node *n = len && c->parked.count ? kctl__map_find(&c->parked, key, len, kctl__hash(key, len)) : NULL;
    if (!n) return;
    kctl__map_remove(&c->parked, &c->allocator, n);
    kctl__free(&c->allocator, n);
}

/* Empty the parked set; release: each key queued after a delay uniform
   in [0, ramp_ns). */
static void kctl__ctl_unpark_all(kctl_controller *c, bool release) {
    size_t i;
    for (i = 0; i < c->parked.cap; i++) {
        kctl__node *n = c->parked.slots[i].node;
        if (!n) continue;
        if (release) kctl_queue_add_after(c->q, n->key, kctl__rand_upto(&c->rng, c->off.ramp_ns - 1));
        kctl__free(&c->allocator, n);
    }
    kctl__map_clear(&c->parked);
}

/* Take one parked key out as the next probe, due after a delay in
   [probe_ns/2, probe_ns]; then double probe_ns up to probe_max_ns. */
static void kctl__ctl_probe(kctl_controller *c) {
    size_t i;
    kctl__node *n = NULL;
    for (i = 0; i < c->parked.cap && !n; i++) n = c->parked.slots[i].node;
    if (!n) return; /* nothing parked: the next failure parks and probes */
    kctl__map_remove(&c->parked, &c->allocator, n);
    kctl__free(&c->allocator, c->probe);
    c->probe = n;
    kctl_queue_add_after(c->q, n->key, c->probe_ns - c->probe_ns / 2 + kctl__rand_upto(&c->rng, c->probe_ns / 2));
    c->probe_ns = c->probe_ns > c->off.probe_max_ns / 2 ? c->off.probe_max_ns : c->probe_ns * 2;
}

/* The offline rules for a reconcile of key that returned r: true when
   they decided what happens to the key (it was parked), false when the
   result rules apply. */
static bool kctl__ctl_offline(kctl_controller *c, const char *key, const kctl_reconcile_result *r) {
    bool probe = c->probe && kctl__strcmp(c->probe->key, key) == 0;
    if (probe) {
        kctl__free(&c->allocator, c->probe);
        c->probe = NULL;
        c->stats.probes++;
    }
    if (r->error && !r->terminal && kctl__ctl_unreachable(r->error)) {
        if (!kctl__ctl_park(c, key)) return false;
        c->stats.parked++;
        if (!c->stats.offline) {
            c->stats.offline = true;
            c->stats.outages++;
            c->probe_ns = c->off.probe_min_ns;
            kctl__log(&c->logger, KCTL_LOG_WARN, KCTL_LOGITEM_CONTROLLER_OFFLINE);
        }
        if (!c->probe) kctl__ctl_probe(c);
        c->stats.parked_now = (uint32_t)c->parked.count;
        return true;
    }
    kctl__ctl_unpark(c, key); /* it ran: whatever it needed, it is not waiting for the store */
    if (probe && c->stats.offline) {
        c->stats.offline = false;
        kctl__log(&c->logger, KCTL_LOG_INFO, KCTL_LOGITEM_CONTROLLER_ONLINE);
        kctl__ctl_unpark_all(c, true);
    }
    c->stats.parked_now = (uint32_t)c->parked.count;
    return false;
}
#endif /* KCTL__CTL_OFFLINE */

#if KCTL__CTL_KEYRECS
/* ---- hold_backoff and hot_loop: what the controller keeps per key (under c->mu) */
typedef struct kctl__keyrec {
    kctl__node node;      /* the key follows the record */
    uint64_t not_before;  /* hold_backoff: no run before this (0: none) */
    uint64_t hot_until;   /* hot_loop: no run before this at the same generation */
    int64_t generation;   /* the object's, at the runs counted */
    uint64_t since;       /* the window's start */
    uint32_t runs;        /* runs in the window at that generation */
} kctl__keyrec;

static kctl__keyrec *kctl__ctl_keyrec(kctl_controller *c, const char *key, bool create) {
    size_t len = kctl__key_len(key);
    uint32_t h;
    kctl__keyrec *k;
    if (!len) return NULL;
    h = kctl__hash(key, len);
    if ((k = (kctl__keyrec *)kctl__map_find(&c->keyrecs, key, len, h)) != NULL || !create) return k;
    if (kctl__map_reserve(&c->keyrecs, &c->allocator) != KCTL_OK || !(k = (kctl__keyrec *)kctl__alloc(&c->allocator, sizeof *k + len + 1)))
        return NULL; /* no memory: the key goes without (client-go's rules) */
    memset(k, 0, sizeof *k);
    kctl__memcpy(k + 1, key, len + 1);
    k->node.key = (const char *)(k + 1);
    k->node.len = (uint32_t)len;
    k->node.hash = h;
    kctl__map_insert(&c->keyrecs, &k->node);
    return k;
}

/* How long key must still wait before it may run (0: it may run now): its
   backoff's end, or a hot loop's pause unless the spec changed since. */
static uint64_t kctl__ctl_held(kctl_controller *c, const char *key, uint64_t now) {
    kctl__keyrec *k;
    uint64_t until = 0, hot = 0;
    int64_t gen = 0;
    kctl__mutex_lock(&c->mu);
    if ((k = kctl__ctl_keyrec(c, key, false)) != NULL) {
        until = k->not_before;
        hot = k->hot_until;
        gen = k->generation;
    }
    kctl__mutex_unlock(&c->mu);
    if (KCTL__CTL_HOT && hot > until) {
        kctl_obj *o = kctl_indexer_get(kctl_informer_indexer(c->primary), key);
        if (o && kctl_obj_generation(o) == gen) until = hot; /* a new spec is not the loop */
        kctl_obj_unref(o);
    }
    if (until <= now) return 0;
    kctl__mutex_lock(&c->mu);
    c->stats.held++;
    kctl__mutex_unlock(&c->mu);
    return until - now;
}

/* Count a run of key at generation gen (obj present) and find a hot loop;
   a gone object's record goes. */
static void kctl__ctl_count_run(kctl_controller *c, const char *key, bool present, int64_t gen, uint64_t now) {
    kctl__keyrec *k = kctl__ctl_keyrec(c, key, present && c->hot.max);
    if (!k) return;
    if (!present) {
        kctl__map_remove(&c->keyrecs, &c->allocator, &k->node);
        kctl__free(&c->allocator, k);
        return;
    }
    if (!KCTL__CTL_HOT || !c->hot.max) return;
    if (k->runs == 0 || k->generation != gen || now - k->since >= c->hot.window_ns) {
        k->generation = gen;
        k->since = now;
        k->runs = 0;
    }
    if (++k->runs == c->hot.max + 1) { /* once a window */
        c->stats.hot_loops++;
        kctl__log(&c->logger, KCTL_LOG_WARN, KCTL_LOGITEM_CONTROLLER_HOT_LOOP);
    }
    if (k->runs > c->hot.max) k->hot_until = now + c->hot.slow_ns;
}
#endif /* KCTL__CTL_KEYRECS */

/* Count a reconcile's result in s (and its time, if it was called). */
static void kctl__ctl_tally(kctl_controller_stats *s, const kctl_reconcile_result *r, bool called, uint64_t t0, uint64_t t1) {
    if (KCTL__Q_DUR && called) kctl__hist_observe(&s->reconcile_time, t1 > t0 ? t1 - t0 : 0);
    if (r->error) {
        s->error++; /* every error, as controller-runtime's ReconcileErrors */
        if (r->terminal) s->terminal++;
    } else if (r->requeue_after_ns) s->requeue_after++;
    else if (r->requeue) s->requeue++;
    else s->success++;
}

/* Reconcile one key handed out by the queue and apply the result rules;
   the caller calls done(key) after. cnt: a worker's own counters (NULL:
   c->stats; so too with offline mode, hold_backoff or hot_loop on, whose
   records are counted under c->mu with them). */
static void kctl__ctl_reconcile_key(kctl_controller *c, const char *key, kctl__ctlcount *cnt) {
    kctl_reconcile_ctx ctx;
    kctl_reconcile_result r;
    char nsbuf[64], *ns = NULL;
    uint64_t t0 = 0, t1 = 0;
    int64_t gen = 0;
    bool called = false, parked = false, present;
#if KCTL__CTL_KEYRECS
    bool keyrecs = c->hold_backoff || c->hot.max;
    uint64_t wait;
    if (keyrecs && (wait = kctl__ctl_held(c, key, kctl_clock_now(&c->clock))) != 0) {
        kctl_queue_add_after(c->q, key, wait); /* it runs then, once, whatever woke it */
        return;
    }
#endif
    memset(&ctx, 0, sizeof ctx);
    memset(&r, 0, sizeof r);
    ctx.controller = c;
    ctx.key = key;
    ctx.cache = kctl_informer_indexer(c->primary);
    ctx.obj = kctl_indexer_get(ctx.cache, key);
    ctx.transport = c->transport;
    ctx.user_data = c->user_data;
    if (ctx.obj) { /* its key is key */
        ctx.ns = kctl_obj_namespace(ctx.obj);
        ctx.name = kctl_obj_name(ctx.obj);
    } else { /* gone: split the key (SplitMetaNamespaceKey) */
        const char *slash = kctl__strchr(key, '/');
        ctx.ns = "";
        ctx.name = key;
        if (slash && !kctl__strchr(slash + 1, '/')) {
            size_t n = (size_t)(slash - key);
            ns = n < sizeof nsbuf ? nsbuf : (char *)kctl__alloc(&c->allocator, n + 1);
            if (ns) {
                kctl__memcpy(ns, key, n);
                ns[n] = '\0';
                ctx.ns = ns;
                ctx.name = slash + 1;
            } else {
                r.error = KCTL_ERR_NOMEM; /* no reconcile without its request: retried */
            }
        }
    }
    if (!r.error) {
        if (KCTL__Q_DUR) t0 = kctl_clock_now(&c->clock);
        r = c->reconcile(&ctx);
        if (KCTL__Q_DUR || KCTL__CTL_KEYRECS) t1 = kctl_clock_now(&c->clock);
        called = true;
    }
    present = ctx.obj != NULL;
    if (present) gen = kctl_obj_generation(ctx.obj);
    kctl_obj_unref(ctx.obj);
    if (ns && ns != nsbuf) kctl__free(&c->allocator, ns);
#if KCTL__CTL_OFFLINE
    if (c->off.enabled) cnt = NULL;
#endif
#if KCTL__CTL_KEYRECS
    if (keyrecs) cnt = NULL;
#endif
    if (cnt) {
        kctl__mutex_lock(&cnt->mu);
        kctl__ctl_tally(&cnt->s, &r, called, t0, t1);
        kctl__mutex_unlock(&cnt->mu);
        (void)gen;
    } else {
        kctl__mutex_lock(&c->mu);
        kctl__ctl_tally(&c->stats, &r, called, t0, t1);
#if KCTL__CTL_OFFLINE
        parked = c->off.enabled && kctl__ctl_offline(c, key, &r);
#endif
#if KCTL__CTL_KEYRECS
        if (keyrecs && called) kctl__ctl_count_run(c, key, present, gen, t1);
#else
        (void)gen;
#endif
        kctl__mutex_unlock(&c->mu);
    }
    if (parked) {
        /* waits for the store: no limiter, no forget */
    } else if (r.error) {
        if (!r.terminal) {
            if (r.requeue_after_ns) kctl__log(&c->logger, KCTL_LOG_WARN, KCTL_LOGITEM_CONTROLLER_REQUEUE_AFTER_WITH_ERROR);
#if KCTL__CTL_HOLD
            if (c->hold_backoff && !kctl_queue_shutting_down(c->q)) {
                /* add_rate_limited, the delay kept: an event does not end it early */
                uint64_t d = kctl_limiter_when(c->q->limiter, key);
                kctl__keyrec *k;
                kctl__mutex_lock(&c->mu);
                if ((k = kctl__ctl_keyrec(c, key, true)) != NULL && k->not_before < t1 + d) k->not_before = t1 + d;
                kctl__mutex_unlock(&c->mu);
                kctl_queue_add_after(c->q, key, d);
            } else
#endif
            {
                kctl_queue_add_rate_limited(c->q, key);
            }
        } /* terminal: no retry, and the failures stay counted */
    } else if (r.requeue_after_ns) { /* wins over requeue */
        kctl_queue_forget(c->q, key);
        kctl_queue_add_after(c->q, key, r.requeue_after_ns);
    } else if (r.requeue) {
        kctl_queue_add_rate_limited(c->q, key);
    } else {
        kctl_queue_forget(c->q, key);
    }
}

/* Reconcile one key handed out by the queue, then done(key). */
static KCTL__SMALL_CALL32 void kctl__ctl_reconcile(kctl_controller *c, const char *key) {
    kctl__ctl_reconcile_key(c, key, NULL);
    kctl_queue_done(c->q, key);
}

KCTL_API int kctl_controller_step(kctl_controller *c, size_t max, size_t *done) {
    size_t n = 0;
    const char *key;
    int rc = KCTL_OK;
    if (done) *done = 0;
    if (!c) return KCTL_ERR_INVALID_ARG;
    while (n < max && (rc = kctl_queue_try_get(c->q, &key)) == KCTL_OK) {
        kctl__ctl_reconcile(c, key);
        n++;
    }
    if (done) *done = n;
    return rc == KCTL_ERR_SHUTDOWN ? rc : KCTL_OK;
}

/* Whether every informer c watches has synced (the workers' start condition). */
static bool kctl__ctl_synced(kctl_controller *c) {
    const kctl__ctlwatch *w;
    kctl__mutex_lock(&c->mu);
    w = c->watches; /* nodes never change once pushed */
    kctl__mutex_unlock(&c->mu);
    for (; w; w = w->next)
        if (!kctl_informer_has_synced(w->inf)) return false;
    return true;
}

/* Fold c's queue's next ready time into *dl (ready now: now), and the
   time its grown table may be given back (kctl__queue_due). */
static void kctl__ctl_due(kctl_controller *c, uint64_t *dl) {
    uint64_t t = kctl__queue_due(c->q, true);
    if (t == 0) t = kctl_clock_now(&c->clock);
    if (t < *dl) *dl = t;
}

/* Step the informers c watches (each once) with no waiting; fold their
   deadlines into *dl. SHUTDOWN if one's FIFO is closed. */
static int kctl__ctl_step_informers(kctl_controller *c, uint64_t *dl) {
    const kctl__ctlwatch *w, *head, *v;
    int rc = KCTL_OK;
    kctl__mutex_lock(&c->mu);
    head = c->watches;
    kctl__mutex_unlock(&c->mu);
    for (w = head; w; w = w->next) {
        uint64_t n = UINT64_MAX;
        for (v = head; v != w && v->inf != w->inf; v = v->next) { }
        if (v != w) continue; /* stepped already */
        if (kctl_informer_step(w->inf, 0, &n) == KCTL_ERR_SHUTDOWN) rc = KCTL_ERR_SHUTDOWN;
        if (n < *dl) *dl = n;
    }
    return rc;
}

KCTL_API int kctl_controller_poll(kctl_controller *c, size_t budget, uint64_t *next_deadline) {
    uint64_t dl = UINT64_MAX;
    bool running;
    int rc;
    if (next_deadline) *next_deadline = UINT64_MAX;
    if (!c) return KCTL_ERR_INVALID_ARG;
    kctl__mutex_lock(&c->mu);
    running = c->running;
    kctl__mutex_unlock(&c->mu);
    if (running) return KCTL_ERR_EXISTS;
    if (kctl_queue_shutting_down(c->q)) return KCTL_ERR_SHUTDOWN;
    rc = kctl__ctl_step_informers(c, &dl);
    if (rc == KCTL_OK && kctl__ctl_synced(c)) { /* reconciles on synced caches only, as start */
        rc = kctl_controller_step(c, budget, NULL);
        kctl__ctl_due(c, &dl);
    }
    if (next_deadline) *next_deadline = dl;
    return rc;
}

#ifndef KCTL_NO_THREADS
static void *kctl__ctl_worker(void *arg) {
    kctl_controller *c = (kctl_controller *)arg;
    const char *key, *prev = NULL;
    bool stopping = false;
    uint32_t owner;
    kctl__ctlcount *cnt;
    kctl__mutex_lock(&c->mu);
    owner = ++c->owners; /* a slot of the queue's of its own, and counters */
    kctl__mutex_unlock(&c->mu);
    cnt = (kctl__ctlcount *)(void *)(c->counts_at + (owner - 1) * c->count_size);
    /* done(previous key) and get(next) in one hold of the queue's lock,
       which also says whether the queue is stopping: one lock round trip
       per key instead of three. */
    while (kctl__queue_get(c->q, prev, &key, true, &stopping, owner) == KCTL_OK) {
        if (!stopping) kctl__ctl_reconcile_key(c, key, cnt); /* stopping: not begun, dropped (done at the next get) */
        prev = key;
    }
    kctl__mutex_lock(&c->mu);
    c->live--;
    kctl__cond_broadcast(&c->cv);
    kctl__mutex_unlock(&c->mu);
    return NULL;
}
#endif

KCTL_API int kctl_controller_start(kctl_controller *c, uint64_t sync_timeout_ns) {
#ifdef KCTL_NO_THREADS
    (void)c;
    (void)sync_timeout_ns;
    return KCTL_ERR_INVALID_ARG; /* no threads: call kctl_controller_step */
#else
    uint32_t i;
    const kctl__ctlwatch *w;
    int rc = KCTL_OK;
    if (!c) return KCTL_ERR_INVALID_ARG;
    if (kctl_queue_shutting_down(c->q)) return KCTL_ERR_SHUTDOWN; /* stopped: it runs once */
    kctl__mutex_lock(&c->mu);
    if (c->running || c->nthreads) rc = KCTL_ERR_EXISTS;
    w = c->watches; /* the nodes from here on never change */
    kctl__mutex_unlock(&c->mu);
    if (rc != KCTL_OK) return rc;
    for (; w; w = w->next) /* workers start only on synced caches */
        if ((rc = kctl_informer_wait_for_sync(w->inf, sync_timeout_ns)) != KCTL_OK) return rc;
    kctl__mutex_lock(&c->mu);
    if (c->running || c->nthreads) { /* another start came first while this one waited */
        kctl__mutex_unlock(&c->mu);
        return KCTL_ERR_EXISTS;
    }
    c->running = true;
    for (i = 0; i < c->workers && rc == KCTL_OK; i++) {
        rc = kctl__thread_start(&c->threads[i], kctl__ctl_worker, c);
        if (rc == KCTL_OK) {
            c->nthreads++;
            c->live++;
        }
    }
    kctl__mutex_unlock(&c->mu);
    if (rc != KCTL_OK) kctl_controller_stop(c);
    return rc;
#endif
}

KCTL_API int kctl_controller_stop_timeout(kctl_controller *c, uint64_t timeout_ns) {
#ifndef KCTL_NO_THREADS
    uint32_t i, n = 0;
    uint64_t end;
    int rc = KCTL_OK;
    if (!c) return KCTL_ERR_INVALID_ARG;
    end = kctl__add_sat(kctl_clock_now(NULL), timeout_ns);
    kctl__mutex_lock(&c->mu);
    c->running = false;
    n = c->nthreads;
    kctl__mutex_unlock(&c->mu);
    kctl_queue_shutdown(c->q); /* no more keys (started or not: it runs once); the workers drop queued ones and end */
    if (!n) return KCTL_OK;
    kctl__mutex_lock(&c->mu);
    while (c->live) { /* real time: a simulation's main thread, which moves a virtual clock, waits here */
        uint64_t now = kctl_clock_now(NULL);
        if (timeout_ns == UINT64_MAX) kctl__cond_wait(&c->cv, &c->mu);
        else if (now >= end) {
            rc = KCTL_ERR_TIMEOUT;
            break;
        } else kctl__cond_wait_for(&c->cv, &c->mu, end - now);
    }
    n = rc == KCTL_OK ? c->nthreads : 0; /* one stopper joins them */
    if (rc == KCTL_OK) c->nthreads = 0;
    kctl__mutex_unlock(&c->mu);
    for (i = 0; i < n; i++) kctl__thread_join(c->threads[i]);
    if (rc != KCTL_OK) kctl__log(&c->logger, KCTL_LOG_WARN, KCTL_LOGITEM_CONTROLLER_STOP_TIMEOUT);
    return rc;
#else
    (void)timeout_ns;
    if (!c) return KCTL_ERR_INVALID_ARG;
    kctl_queue_shutdown(c->q);
    return KCTL_OK;
#endif
}

KCTL_API void kctl_controller_stop(kctl_controller *c) { (void)kctl_controller_stop_timeout(c, UINT64_MAX); }

KCTL_API kctl_queue *kctl_controller_queue(kctl_controller *c) { return c ? c->q : NULL; }

KCTL_API void kctl_controller_read_stats(kctl_controller *c, kctl_controller_stats *out) {
    if (!out) return;
    memset(out, 0, sizeof *out);
    if (!c) return;
    kctl__mutex_lock(&c->mu);
    *out = c->stats;
    kctl__mutex_unlock(&c->mu);
#ifndef KCTL_NO_THREADS
    if (c->counts) {
        uint32_t i;
        int b;
        for (i = 0; i < c->workers; i++) {
            kctl__ctlcount *k = (kctl__ctlcount *)(void *)(c->counts_at + i * c->count_size);
            kctl__mutex_lock(&k->mu);
            out->success += k->s.success;
            out->error += k->s.error;
            out->terminal += k->s.terminal;
            out->requeue += k->s.requeue;
            out->requeue_after += k->s.requeue_after;
            out->reconcile_time.count += k->s.reconcile_time.count;
            out->reconcile_time.sum_ns = kctl__add_sat(out->reconcile_time.sum_ns, k->s.reconcile_time.sum_ns);
            for (b = 0; b < KCTL_HIST_BUCKETS; b++) out->reconcile_time.buckets[b] += k->s.reconcile_time.buckets[b];
            kctl__mutex_unlock(&k->mu);
        }
    }
#endif
}

/* ----------------------------------------------- >>leader LEADER ELECTION */
#ifdef KCTL_NO_LEADER
/* Compiled out: create says UNSUPPORTED (so does a manager asked for
   leader election); the rest get the NULL that create leaves. */
KCTL_API int kctl_leader_create(const kctl_leader_desc *desc, kctl_leader **out) {
    (void)desc;
    if (out) *out = NULL;
    return KCTL_ERR_UNSUPPORTED;
}
KCTL_API void kctl_leader_destroy(kctl_leader *le) { (void)le; }
KCTL_API int kctl_leader_step(kctl_leader *le, bool *leading, uint64_t *next_ns) {
    (void)le;
    if (leading) *leading = false;
    if (next_ns) *next_ns = UINT64_MAX;
    return KCTL_ERR_UNSUPPORTED;
}
KCTL_API int kctl_leader_release(kctl_leader *le) { (void)le; return KCTL_ERR_UNSUPPORTED; }
KCTL_API bool kctl_leader_is_leader(const kctl_leader *le) { (void)le; return false; }
KCTL_API uint32_t kctl_leader_terms(const kctl_leader *le) { (void)le; return 0; }
#else
/* The Lease as an elector last saw it (read, or written by itself): the
   object, its parsed document and its election record. */
typedef struct kctl__le_lease {
    kctl_obj *obj;        /* a reference; NULL: none seen */
    kctl_json j;          /* obj's document, tokens in toks */
    kctl_json_tok *toks;  /* from the elector's allocator */
    uint32_t spec;        /* KCTL_JSON_NONE: no spec */
    bool mine;            /* holderIdentity is this elector's identity */
    bool vacant;          /* holderIdentity empty or absent */
    int64_t duration_s;   /* leaseDurationSeconds */
    int64_t transitions;  /* leaseTransitions */
    bool has_acquire;
    int64_t acquire_us;   /* acquireTime, us since the Unix epoch */
} kctl__le_lease;

struct kctl_leader {
    kctl_transport t;
    kctl_resource lease;       /* its strings, name and identity in strs */
    const char *name, *identity;
    char *strs;
    uint64_t lease_ns, renew_ns, retry_ns;
    int64_t lease_s;           /* leaseDurationSeconds written: lease_ns rounded up */
    kctl_clock clock;
    bool system_wall;          /* the monotonic clock: wall time from the system at each write */
    int64_t wall0_ns;          /* else: the system's wall time at create, */
    uint64_t clock0_ns;        /* and the clock's time then */
    uint64_t rng;              /* xorshift64, for the jitter */
    kctl_allocator allocator;
    kctl__le_lease seen;       /* the Lease as last read or written */
    uint64_t seen_change;      /* when its record last changed, on the clock */
    uint64_t last_renew;       /* the last successful write, on the clock */
    bool leading;
    uint32_t terms;
};

/* The wall time at clock time now (see LEADER ELECTION), in us. */
static int64_t kctl__le_wall_us(const kctl_leader *le, uint64_t now) {
    uint64_t elapsed;
    if (le->system_wall) return (int64_t)kctl__port_wall_ns() / 1000;
    elapsed = now > le->clock0_ns ? now - le->clock0_ns : 0;
    if (elapsed > (uint64_t)(INT64_MAX - le->wall0_ns)) return KCTL__TIME_US_MAX;
    return (le->wall0_ns + (int64_t)elapsed) / 1000;
}

/* A wait before the next try of a candidate: retry * (1 + r * 1.2), r in [0, 1). */
static uint64_t kctl__le_jitter(kctl_leader *le) {
    uint64_t x = le->rng;
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    le->rng = x;
    return kctl__add_sat(le->retry_ns, kctl__mul_frac(le->retry_ns / 5 * 6 + le->retry_ns % 5 * 6 / 5, x)); /* * 1.2 */
}

/* ---- the Lease */
static void kctl__le_forget(kctl_leader *le, kctl__le_lease *l) {
    kctl__free(&le->allocator, l->toks);
    kctl_obj_unref(l->obj);
    memset(l, 0, sizeof *l);
    l->spec = KCTL_JSON_NONE;
}

/* Parse text with tokens from the allocator, counted first: a document
   from a store or a peer has no size but the JSON limits. */
static int kctl__le_parse(kctl_leader *le, const char *text, size_t len, kctl_json *j, kctl_json_tok **toks) {
    size_t size;
    int rc;
    *toks = NULL;
    if ((rc = kctl_json_parse(text, len, NULL, 0, NULL, j)) != KCTL_OK) return rc;
    size = (size_t)j->ntoks * sizeof **toks;
    if (size / sizeof **toks != j->ntoks || !(*toks = (kctl_json_tok *)kctl__alloc(&le->allocator, size))) return KCTL_ERR_NOMEM;
    if ((rc = kctl_json_parse(text, len, *toks, j->ntoks, NULL, j)) != KCTL_OK) {
        kctl__free(&le->allocator, *toks);
        *toks = NULL;
    }
    return rc;
}

/* A record's integer: absent or null is 0 (client-go's nil); else an int32. */
static bool kctl__le_int32(const kctl_json *j, uint32_t v, int64_t *out) {
    *out = 0;
    if (v == KCTL_JSON_NONE || kctl_json_type_of(j, v) == KCTL_JSON_NULL) return true;
    return kctl_json_int64(j, v, out) == KCTL_OK && *out >= INT32_MIN && *out <= INT32_MAX;
}

/* A record's time: absent or null is none; else an RFC 3339 string. */
static bool kctl__le_time(const kctl_json *j, uint32_t v, bool *has, int64_t *us) {
    char buf[64];
    size_t n;
    *has = false;
    if (v == KCTL_JSON_NONE || kctl_json_type_of(j, v) == KCTL_JSON_NULL) return true;
    if (kctl_json_string(j, v, buf, sizeof buf, &n) != KCTL_OK || !kctl__time_parse(buf, n, us)) return false;
    *has = true;
    return true;
}

/* Read obj (a reference, which l takes over whatever the result) as a
   Lease: OK, NOMEM, or PROTO when it cannot be read (never free, then). */
static int kctl__le_read(kctl_leader *le, kctl_obj *obj, kctl__le_lease *l) {
    size_t len;
    const char *doc = kctl_obj_json(obj, &len);
    int64_t renew_us;
    bool has_renew;
    uint32_t v;
    int rc;
    memset(l, 0, sizeof *l);
    l->obj = obj;
    l->spec = KCTL_JSON_NONE;
    l->vacant = true;
    if ((rc = kctl__le_parse(le, doc, len, &l->j, &l->toks)) != KCTL_OK) goto fail;
    rc = KCTL_ERR_PROTO;
    if (kctl_json_type_of(&l->j, 0) != KCTL_JSON_OBJECT) goto fail;
    l->spec = kctl_json_member(&l->j, 0, "spec");
    if (l->spec == KCTL_JSON_NONE || kctl_json_type_of(&l->j, l->spec) == KCTL_JSON_NULL) return KCTL_OK; /* an empty record */
    if (kctl_json_type_of(&l->j, l->spec) != KCTL_JSON_OBJECT) goto fail;
    v = kctl_json_member(&l->j, l->spec, "holderIdentity");
    if (v != KCTL_JSON_NONE && kctl_json_type_of(&l->j, v) != KCTL_JSON_NULL) {
        if (kctl_json_type_of(&l->j, v) != KCTL_JSON_STRING) goto fail;
        l->vacant = l->j.toks[v].start == l->j.toks[v].end;
        l->mine = kctl_json_string_eq(&l->j, v, le->identity);
    }
    if (!kctl__le_int32(&l->j, kctl_json_member(&l->j, l->spec, "leaseDurationSeconds"), &l->duration_s) ||
        !kctl__le_int32(&l->j, kctl_json_member(&l->j, l->spec, "leaseTransitions"), &l->transitions) ||
        !kctl__le_time(&l->j, kctl_json_member(&l->j, l->spec, "acquireTime"), &l->has_acquire, &l->acquire_us) ||
        !kctl__le_time(&l->j, kctl_json_member(&l->j, l->spec, "renewTime"), &has_renew, &renew_us))
        goto fail;
    return KCTL_OK;
fail:
    kctl__le_forget(le, l);
    return rc;
}

/* Take rd (read at now) as the Lease seen; a changed record restarts the
   expiry: its holder is alive. */
static void kctl__le_adopt(kctl_leader *le, kctl__le_lease *rd, uint64_t now) {
    if (!le->seen.obj || !kctl__jequal(&le->seen.j, le->seen.spec, &rd->j, rd->spec, &le->allocator)) le->seen_change = now;
    kctl__le_forget(le, &le->seen);
    le->seen = *rd;
}

/* Whether the Lease seen is still held at now: its record changed less
   than its own leaseDurationSeconds ago (client-go's isLeaseValid). */
static bool kctl__le_valid(const kctl_leader *le, uint64_t now) {
    if (le->seen.duration_s <= 0) return false;
    return now - le->seen_change < (uint64_t)le->seen.duration_s * UINT64_C(1000000000);
}

/* Write the Lease with this record: base NULL creates it; else base's
   document with only spec's record fields changed and base's
   resourceVersion as the precondition (a JSON merge patch over it). On
   success what was written is the Lease seen, changed at now. */
static int kctl__le_write(kctl_leader *le, const kctl__le_lease *base, const char *holder, int64_t duration_s,
                          int64_t acquire_us, int64_t renew_us, int64_t transitions, uint64_t now) {
    kctl_jw w, merged;
    char acquire[32], renew[32];
    const char *text = NULL;
    size_t n = 0;
    kctl_obj *mine = NULL;
    kctl__le_lease l;
    int rc;
    kctl__time_format(acquire_us, true, acquire);
    kctl__time_format(renew_us, true, renew);
    kctl_jw_init_growable(&w, &le->allocator);
    kctl_jw_init_growable(&merged, &le->allocator);
    kctl_jw_object_begin(&w);
    if (!base) {
        kctl_jw_key(&w, "apiVersion");
        kctl_jw_string(&w, "coordination.k8s.io/v1");
        kctl_jw_key(&w, "kind");
        kctl_jw_string(&w, "Lease");
    }
    kctl_jw_key(&w, "metadata");
    kctl_jw_object_begin(&w);
    if (!base) {
        kctl_jw_key(&w, "name");
        kctl_jw_string(&w, le->name);
        kctl_jw_key(&w, "namespace");
        kctl_jw_string(&w, le->lease.ns);
    } else {
        kctl_jw_key(&w, "resourceVersion");
        kctl_jw_string(&w, kctl_obj_resource_version(base->obj));
    }
    kctl_jw_object_end(&w);
    kctl_jw_key(&w, "spec");
    kctl_jw_object_begin(&w);
    kctl_jw_key(&w, "holderIdentity");
    kctl_jw_string(&w, holder);
    kctl_jw_key(&w, "leaseDurationSeconds");
    kctl_jw_int64(&w, duration_s);
    kctl_jw_key(&w, "acquireTime");
    kctl_jw_string(&w, acquire);
    kctl_jw_key(&w, "renewTime");
    kctl_jw_string(&w, renew);
    kctl_jw_key(&w, "leaseTransitions");
    kctl_jw_int64(&w, transitions);
    kctl_jw_object_end(&w);
    kctl_jw_object_end(&w);
    rc = kctl_jw_finish(&w, &text, &n);
    if (rc == KCTL_OK && base) {
        kctl_json patch;
        kctl_json_tok *toks;
        if ((rc = kctl__le_parse(le, text, n, &patch, &toks)) == KCTL_OK) {
            if ((rc = kctl_json_merge_patch(&base->j, 0, &patch, 0, &merged)) == KCTL_OK) rc = kctl_jw_finish(&merged, &text, &n);
            kctl__free(&le->allocator, toks);
        }
    }
    if (rc == KCTL_OK)
        rc = base ? kctl_transport_update(&le->t, &le->lease, text, n, &mine, NULL) : kctl_transport_create(&le->t, &le->lease, text, n, &mine, NULL);
    kctl_jw_free(&w);
    kctl_jw_free(&merged);
    if (rc != KCTL_OK) {
        kctl_obj_unref(mine);
        return rc;
    }
    kctl__le_forget(le, &le->seen);
    if (kctl__le_read(le, mine, &l) == KCTL_OK) le->seen = l; /* else nothing seen: the next try reads the Lease */
    le->seen_change = now;
    return KCTL_OK;
}

/* One try, client-go's tryAcquireOrRenew. *ok: this process holds the
   Lease now; *other: another holds it and is alive. */
static int kctl__le_try(kctl_leader *le, uint64_t now, bool *ok, bool *other) {
    kctl_obj *cur = NULL;
    kctl__le_lease rd;
    int64_t wall = kctl__le_wall_us(le, now);
    int rc;
    *ok = *other = false;
    if (le->leading && le->seen.obj && le->seen.mine && kctl__le_valid(le, now) &&
        kctl__le_write(le, &le->seen, le->identity, le->lease_s, le->seen.has_acquire ? le->seen.acquire_us : wall, wall,
                       le->seen.transitions, now) == KCTL_OK) {
        *ok = true; /* the fast path: the Lease as last written, without reading it */
        return KCTL_OK;
    }
    rc = kctl_transport_get(&le->t, &le->lease, le->name, &cur, NULL);
    if (rc == KCTL_ERR_NOT_FOUND) {
        rc = kctl__le_write(le, NULL, le->identity, le->lease_s, wall, wall, 0, now);
        *ok = rc == KCTL_OK;
        return rc;
    }
    if (rc != KCTL_OK) return rc;
    if ((rc = kctl__le_read(le, cur, &rd)) != KCTL_OK) return rc; /* unreadable: never free */
    kctl__le_adopt(le, &rd, now);
    if (!rd.vacant && !rd.mine && kctl__le_valid(le, now)) {
        *other = true;
        return KCTL_OK;
    }
    rc = kctl__le_write(le, &le->seen, le->identity, le->lease_s, rd.mine && rd.has_acquire ? rd.acquire_us : wall, wall,
                        rd.mine ? rd.transitions : rd.transitions < INT32_MAX ? rd.transitions + 1 : INT32_MAX, now);
    *ok = rc == KCTL_OK;
    return rc;
}

KCTL_API int kctl_leader_create(const kctl_leader_desc *desc, kctl_leader **out) {
    kctl_leader *le;
    const char *s[6];
    size_t len[6], total = 0;
    uint64_t lease_ns, renew_ns, retry_ns, seed;
    char *p;
    int i;
    if (!out) return KCTL_ERR_INVALID_ARG;
    *out = NULL;
    if (!desc || !desc->transport.vt || !desc->name || !*desc->name || !desc->identity || !*desc->identity ||
        (!desc->allocator.alloc_fn) != (!desc->allocator.free_fn))
        return KCTL_ERR_INVALID_ARG;
    lease_ns = desc->lease_ns ? desc->lease_ns : KCTL_LEADER_LEASE_NS;
    renew_ns = desc->renew_deadline_ns ? desc->renew_deadline_ns : KCTL_LEADER_RENEW_DEADLINE_NS;
    retry_ns = desc->retry_ns ? desc->retry_ns : KCTL_LEADER_RETRY_NS;
    if (lease_ns <= renew_ns || lease_ns / UINT64_C(1000000000) >= (uint64_t)INT32_MAX ||
        retry_ns >= UINT64_MAX / 6 || renew_ns * 5 <= retry_ns * 6) /* renew <= retry * KCTL_LEADER_JITTER */
        return KCTL_ERR_INVALID_ARG; /* what client-go refuses; and leaseDurationSeconds is an int32 */
    s[0] = desc->lease.resource && desc->lease.group ? desc->lease.group : "coordination.k8s.io";
    s[1] = desc->lease.resource && desc->lease.version ? desc->lease.version : "v1";
    s[2] = desc->lease.resource ? desc->lease.resource : "leases";
    s[3] = desc->lease.ns ? desc->lease.ns : "default";
    s[4] = desc->name;
    s[5] = desc->identity;
    for (i = 0; i < 6; i++) total += (len[i] = kctl__strlen(s[i])) + 1;
    if (total > SIZE_MAX - sizeof *le) return KCTL_ERR_NOMEM;
    if (!(le = (kctl_leader *)kctl__alloc(&desc->allocator, sizeof *le + total))) return KCTL_ERR_NOMEM;
    memset(le, 0, sizeof *le);
    le->strs = p = (char *)(le + 1);
    for (i = 0; i < 6; i++) {
        kctl__memcpy(p, s[i], len[i] + 1);
        s[i] = p;
        p += len[i] + 1;
    }
    le->lease.group = s[0];
    le->lease.version = s[1];
    le->lease.resource = s[2];
    le->lease.ns = s[3];
    le->name = s[4];
    le->identity = s[5];
    le->t = desc->transport;
    le->lease_ns = lease_ns;
    le->renew_ns = renew_ns;
    le->retry_ns = retry_ns;
    le->lease_s = (int64_t)((lease_ns + UINT64_C(999999999)) / UINT64_C(1000000000));
    le->clock = desc->clock.now_fn ? desc->clock : kctl_clock_monotonic();
    le->system_wall = le->clock.now_fn == kctl__mono_now;
    le->clock0_ns = kctl_clock_now(&le->clock);
    le->wall0_ns = (int64_t)kctl__port_wall_ns();
    for (seed = UINT64_C(14695981039346656037), p = (char *)le->identity; *p; p++) /* FNV-1a */
        seed = (seed ^ (unsigned char)*p) * UINT64_C(1099511628211);
    le->rng = desc->seed ? desc->seed : seed ? seed : 1;
    le->allocator = desc->allocator;
    le->seen.spec = KCTL_JSON_NONE;
    *out = le;
    return KCTL_OK;
}

KCTL_API void kctl_leader_destroy(kctl_leader *le) {
    if (!le) return;
    kctl__le_forget(le, &le->seen);
    kctl__free(&le->allocator, le);
}

KCTL_API int kctl_leader_step(kctl_leader *le, bool *leading, uint64_t *next_ns) {
    uint64_t now;
    bool ok, other;
    int rc;
    if (!le) return KCTL_ERR_INVALID_ARG;
    now = kctl_clock_now(&le->clock);
    rc = kctl__le_try(le, now, &ok, &other);
    if (ok) {
        if (!le->leading) le->terms++;
        le->leading = true;
        le->last_renew = now;
    } else if (le->leading && (other || now - le->last_renew >= le->renew_ns)) {
        le->leading = false; /* another holds it, or no renewal within the deadline */
    }
    if (leading) *leading = le->leading;
    if (next_ns) *next_ns = kctl__add_sat(now, le->leading ? le->retry_ns : kctl__le_jitter(le));
    return rc;
}

KCTL_API int kctl_leader_release(kctl_leader *le) {
    int rc = KCTL_OK, tries;
    if (!le) return KCTL_ERR_INVALID_ARG;
    if (!le->leading) return KCTL_OK;
    le->leading = false;
    for (tries = 0; tries < 3; tries++) {
        kctl_obj *cur = NULL;
        kctl__le_lease rd;
        uint64_t now = kctl_clock_now(&le->clock);
        int64_t wall = kctl__le_wall_us(le, now);
        rc = kctl_transport_get(&le->t, &le->lease, le->name, &cur, NULL);
        if (rc == KCTL_ERR_NOT_FOUND) return KCTL_OK;
        if (rc != KCTL_OK) return rc;
        if ((rc = kctl__le_read(le, cur, &rd)) != KCTL_OK) return rc;
        kctl__le_adopt(le, &rd, now);
        if (!rd.mine) return KCTL_OK; /* someone else's now */
        rc = kctl__le_write(le, &le->seen, "", 1, wall, wall, rd.transitions, now);
        if (rc != KCTL_ERR_CONFLICT) return rc;
    }
    return rc;
}

KCTL_API bool kctl_leader_is_leader(const kctl_leader *le) { return le && le->leading; }
KCTL_API uint32_t kctl_leader_terms(const kctl_leader *le) { return le ? le->terms : 0; }

#endif /* KCTL_NO_LEADER */

/* ------------------------------------------------------ >>manager MANAGER */
#if !defined(KCTL_NO_THREADS) && !defined(KCTL_PORT_CUSTOM)
#include <signal.h>
#endif

/* ---- lists that grow (through the allocator), of records that stay put */
typedef struct kctl__mgrlist {
    void **items;
    uint32_t n, cap;
} kctl__mgrlist;

/* Room for one more item: NOMEM, or the list doubles (from 8). */
static int kctl__mgrlist_room(const kctl_allocator *a, kctl__mgrlist *l) {
    uint32_t cap;
    size_t size;
    void **items;
    if (l->n < l->cap) return KCTL_OK;
    cap = l->cap ? l->cap * 2 : 8;
    size = (size_t)cap * sizeof *items;
    if (cap < l->cap || size / sizeof *items != cap || !(items = (void **)kctl__alloc(a, size))) return KCTL_ERR_NOMEM;
    if (l->n) kctl__memcpy(items, l->items, l->n * sizeof *items);
    kctl__free(a, l->items);
    l->items = items;
    l->cap = cap;
    return KCTL_OK;
}

/* An informer the manager made: the strings follow the record. */
typedef struct kctl__mgrinf {
    kctl_informer *inf;
    const char *id;       /* "group/resource|ns|labels|fields": what makes informers the same */
    const char *resource; /* "group/resource/ns" (no "/ns" when all), for metrics */
    const char *labels;   /* the selectors, for metrics ("": none) */
    const char *fields;
} kctl__mgrinf;

/* controller-runtime's buckets for controller_runtime_reconcile_time_seconds:
   upper bounds in ns, and as Go prints them for the le label. */
#define KCTL__MGR_RT_N 40
static const uint64_t kctl__mgr_rt_ns[KCTL__MGR_RT_N] = {
    KCTL_MS(5),    KCTL_MS(10),   KCTL_MS(25),   KCTL_MS(50),   KCTL_MS(100),  KCTL_MS(150),  KCTL_MS(200),  KCTL_MS(250),
    KCTL_MS(300),  KCTL_MS(350),  KCTL_MS(400),  KCTL_MS(450),  KCTL_MS(500),  KCTL_MS(600),  KCTL_MS(700),  KCTL_MS(800),
    KCTL_MS(900),  KCTL_SEC(1),   KCTL_MS(1250), KCTL_MS(1500), KCTL_MS(1750), KCTL_SEC(2),   KCTL_MS(2500), KCTL_SEC(3),
    KCTL_MS(3500), KCTL_SEC(4),   KCTL_MS(4500), KCTL_SEC(5),   KCTL_SEC(6),   KCTL_SEC(7),   KCTL_SEC(8),   KCTL_SEC(9),
    KCTL_SEC(10),  KCTL_SEC(15),  KCTL_SEC(20),  KCTL_SEC(25),  KCTL_SEC(30),  KCTL_SEC(40),  KCTL_SEC(50),  KCTL_SEC(60) };
static KCTL__UNUSED const char *const kctl__mgr_rt_le[KCTL__MGR_RT_N] = {
    "0.005", "0.01", "0.025", "0.05", "0.1", "0.15", "0.2", "0.25", "0.3", "0.35", "0.4", "0.45", "0.5", "0.6",
    "0.7",   "0.8",  "0.9",   "1",    "1.25", "1.5", "1.75", "2",   "2.5", "3",    "3.5", "4",    "4.5", "5",
    "6",     "7",    "8",     "9",    "10",  "15",   "20",  "25",   "30",  "40",   "50",  "60" };
/* client-go's workqueue buckets (kctl_histogram_bound_ns), as Go prints them. */
static KCTL__UNUSED const char *const kctl__mgr_wq_le[] = { "1e-08", "1e-07", "1e-06", "1e-05", "0.0001", "0.001",
                                               "0.01",  "0.1",   "1",     "10",    "100",    "1000" };
typedef char kctl__mgr_wq_le_fit[sizeof kctl__mgr_wq_le / sizeof kctl__mgr_wq_le[0] == KCTL_HIST_BUCKETS ? 1 : -1];

/* A controller the manager made: the name follows the record. The manager
   hands the controller its own reconcile, which times the user's on
   controller-runtime's buckets and counts the reconciles running. */
typedef struct kctl__mgrctl {
    kctl_controller *c;
    const char *name;            /* "": unnamed, no metrics of its own */
    kctl_reconcile_fn reconcile; /* the user's */
    void *user_data;
    kctl_clock clock;
    uint32_t workers;
    kctl__mutex mu;              /* what follows */
    uint32_t active;             /* reconciles running now */
    uint64_t count, sum_ns;      /* reconcile time */
    uint64_t buckets[KCTL__MGR_RT_N]; /* per bucket, not cumulative */
} kctl__mgrctl;

static kctl_reconcile_result kctl__mgr_reconcile(const kctl_reconcile_ctx *ctx) {
    kctl__mgrctl *mc = (kctl__mgrctl *)ctx->user_data;
    kctl_reconcile_ctx user = *ctx;
    kctl_reconcile_result r;
    uint64_t t0, t1, d;
    int i = 0;
    user.user_data = mc->user_data;
    kctl__mutex_lock(&mc->mu);
    mc->active++;
    kctl__mutex_unlock(&mc->mu);
    t0 = kctl_clock_now(&mc->clock);
    r = mc->reconcile(&user);
    t1 = kctl_clock_now(&mc->clock);
    d = t1 > t0 ? t1 - t0 : 0;
    while (i < KCTL__MGR_RT_N && d > kctl__mgr_rt_ns[i]) i++;
    kctl__mutex_lock(&mc->mu);
    mc->active--;
    mc->count++;
    mc->sum_ns = kctl__add_sat(mc->sum_ns, d);
    if (i < KCTL__MGR_RT_N) mc->buckets[i]++; /* beyond 60 s: in count only (+Inf) */
    kctl__mutex_unlock(&mc->mu);
    return r;
}

/* ---- requests by verb and result: the manager hands out a transport that
   counts every call, then forwards it to the user's */
enum { KCTL__V_LIST, KCTL__V_WATCH, KCTL__V_GET, KCTL__V_CREATE, KCTL__V_UPDATE, KCTL__V_STATUS, KCTL__V_PATCH, KCTL__V_DELETE, KCTL__V_N };
static KCTL__UNUSED const char *const kctl__verb_names[KCTL__V_N] = { "list", "watch", "get", "create", "update", "update_status", "patch", "delete" };
#define KCTL__RESULT_VAL(id, v, msg, next) KCTL_##id,
#define KCTL__RESULT_NAME(id, v, msg, next) #id,
static const int kctl__code_vals[] = { KCTL_RESULTS(KCTL__RESULT_VAL) };
static KCTL__UNUSED const char *const kctl__code_names[] = { KCTL_RESULTS(KCTL__RESULT_NAME) "ERR_OTHER" };
#undef KCTL__RESULT_VAL
#undef KCTL__RESULT_NAME
#define KCTL__CODES ((int)(sizeof kctl__code_names / sizeof kctl__code_names[0])) /* every kctl_result, then anything else */

typedef struct kctl__mgrreq {
    kctl_transport inner;
    kctl__mutex mu; /* a lock, not 64-bit atomics: 32-bit targets may lack them */
    uint64_t n[KCTL__V_N][KCTL__CODES];
} kctl__mgrreq;

static int kctl__mgr_count(kctl__mgrreq *r, int verb, int rc) {
    int i = 0;
    while (i < KCTL__CODES - 1 && kctl__code_vals[i] != rc) i++;
    kctl__mutex_lock(&r->mu);
    r->n[verb][i]++;
    kctl__mutex_unlock(&r->mu);
    return rc;
}
static int kctl__mgrt_list(void *self, const kctl_resource *res, const kctl_list_opts *o, kctl_list_result *out, kctl_api_status *st) {
    kctl__mgrreq *r = (kctl__mgrreq *)self;
    return kctl__mgr_count(r, KCTL__V_LIST, kctl_transport_list(&r->inner, res, o, out, st));
}
static int kctl__mgrt_watch_open(void *self, const kctl_resource *res, const kctl_list_opts *o, const char *rv, kctl_watch **out,
                                 kctl_api_status *st) {
    kctl__mgrreq *r = (kctl__mgrreq *)self;
    return kctl__mgr_count(r, KCTL__V_WATCH, kctl_transport_watch_open(&r->inner, res, o, rv, out, st));
}
static int kctl__mgrt_watch_next(void *self, kctl_watch *w, uint64_t timeout_ns, kctl_event *ev, kctl_api_status *st) {
    kctl__mgrreq *r = (kctl__mgrreq *)self; /* one request: the stream's events are not counted */
    return kctl_transport_watch_next(&r->inner, w, timeout_ns, ev, st);
}
static void kctl__mgrt_watch_close(void *self, kctl_watch *w) {
    kctl__mgrreq *r = (kctl__mgrreq *)self;
    r->inner.vt->watch_close(r->inner.self, w);
}
static int kctl__mgrt_watch_notify(void *self, kctl_watch *w, const kctl_wake *wake) {
    kctl__mgrreq *r = (kctl__mgrreq *)self; /* not a request: not counted */
    return kctl_transport_watch_notify(&r->inner, w, wake);
}
static int kctl__mgrt_get(void *self, const kctl_resource *res, const char *name, kctl_obj **out, kctl_api_status *st) {
    kctl__mgrreq *r = (kctl__mgrreq *)self;
    return kctl__mgr_count(r, KCTL__V_GET, kctl_transport_get(&r->inner, res, name, out, st));
}
static int kctl__mgrt_create(void *self, const kctl_resource *res, const char *json, size_t len, kctl_obj **out, kctl_api_status *st) {
    kctl__mgrreq *r = (kctl__mgrreq *)self;
    return kctl__mgr_count(r, KCTL__V_CREATE, kctl_transport_create(&r->inner, res, json, len, out, st));
}
static int kctl__mgrt_update(void *self, const kctl_resource *res, const char *json, size_t len, kctl_obj **out, kctl_api_status *st) {
    kctl__mgrreq *r = (kctl__mgrreq *)self;
    return kctl__mgr_count(r, KCTL__V_UPDATE, kctl_transport_update(&r->inner, res, json, len, out, st));
}
static int kctl__mgrt_status(void *self, const kctl_resource *res, const char *json, size_t len, kctl_obj **out, kctl_api_status *st) {
    kctl__mgrreq *r = (kctl__mgrreq *)self;
    return kctl__mgr_count(r, KCTL__V_STATUS, kctl_transport_update_status(&r->inner, res, json, len, out, st));
}
static int kctl__mgrt_patch(void *self, const kctl_resource *res, const char *name, const char *patch, size_t len, unsigned flags,
                            kctl_obj **out, kctl_api_status *st) {
    kctl__mgrreq *r = (kctl__mgrreq *)self; /* a transport without patch: the wrapper's get and update count as one patch */
    return kctl__mgr_count(r, KCTL__V_PATCH, kctl_transport_patch(&r->inner, res, name, patch, len, flags, out, st));
}
static int kctl__mgrt_remove(void *self, const kctl_resource *res, const char *name, const kctl_delete_opts *opts, kctl_obj **out,
                             kctl_api_status *st) {
    kctl__mgrreq *r = (kctl__mgrreq *)self;
    return kctl__mgr_count(r, KCTL__V_DELETE, kctl_transport_remove(&r->inner, res, name, opts, out, st));
}
static const kctl_transport_vtable kctl__mgr_tvt = {
    kctl__mgrt_list, kctl__mgrt_watch_open, kctl__mgrt_watch_next, kctl__mgrt_watch_close, kctl__mgrt_get,
    kctl__mgrt_create, kctl__mgrt_update, kctl__mgrt_status, kctl__mgrt_patch, kctl__mgrt_remove, NULL,
    kctl__mgrt_watch_notify };

struct kctl_manager {
    kctl_transport transport;     /* counting, over req.inner */
    kctl__mgrreq req;
    kctl_clock clock;
    uint64_t resync_ns;
    kctl_allocator allocator;
    kctl_logger logger;
    kctl_leader *leader;          /* leader election, when asked for */
    char *lease_name;             /* for metrics */
    bool release_on_stop;
    uint64_t sync_timeout_ns;     /* what start was given */
    uint64_t default_sync_ns, grace_ns;
    /* ctl_mu serializes starting and stopping the controllers (the leader
       thread, start, stop, a late add_controller): whether they run is
       controllers_up, written under ctl_mu and mu (read under either).
       Taken before mu and le_mu, never under them. */
    kctl__mutex ctl_mu;
    bool controllers_up;
    kctl_manager_leader_info le;  /* under mu */
    /* The leader-election thread. le_mu guards le_stop, le_stopping,
       le_running and the thread's wait; it is the only lock a virtual
       clock's wake takes (the clock's list lock -> le_mu), and nothing is
       called under it. le_stopping: stop has begun, start no controller
       (the thread goes on renewing while they drain); le_stop: end. */
    kctl__mutex le_mu;
    bool le_stop, le_stopping, le_running;
#ifndef KCTL_NO_THREADS
    kctl__thread le_thread;
    kctl__cond le_cv;
    kctl_clock_waiter le_waiter;  /* a virtual clock wakes the thread when it moves */
#endif
    kctl__mutex mu;
    kctl__mgrlist infs;           /* kctl__mgrinf *, only ever added */
    kctl__mgrlist ctls;           /* kctl__mgrctl *, only ever added */
    bool started;
    /* kctl_manager_step (the stepping thread's; stepped under mu) */
    kctl_wake wake;               /* given to every informer */
    bool stepped;                 /* stepped once: start refuses */
    bool step_up;                 /* the controllers may reconcile (leading, or no election) */
    uint64_t le_due;              /* the elector's next try, on the clock (0: at once) */
    uint32_t turn;                /* the controller that reconciles first at the next step */
};

KCTL_API int kctl_manager_create(const kctl_manager_desc *desc, kctl_manager **out) {
    kctl_manager *m;
    int rc = KCTL_OK;
    if (!out) return KCTL_ERR_INVALID_ARG;
    *out = NULL;
    if (!desc || !desc->transport.vt || (!desc->allocator.alloc_fn) != (!desc->allocator.free_fn)) return KCTL_ERR_INVALID_ARG;
    if (!(m = (kctl_manager *)kctl__alloc(&desc->allocator, sizeof *m))) return KCTL_ERR_NOMEM;
    memset(m, 0, sizeof *m);
    m->req.inner = desc->transport;
    m->transport.vt = &kctl__mgr_tvt;
    m->transport.self = &m->req;
    m->clock = desc->clock.now_fn ? desc->clock : kctl_clock_monotonic();
    m->resync_ns = desc->resync_ns;
    m->allocator = desc->allocator;
    m->logger = desc->logger;
    m->release_on_stop = desc->release_on_stop;
    m->wake = desc->wake;
    m->grace_ns = desc->graceful_timeout_ns ? desc->graceful_timeout_ns : KCTL_MANAGER_GRACEFUL_TIMEOUT_NS;
    m->default_sync_ns = desc->cache_sync_timeout_ns ? desc->cache_sync_timeout_ns : KCTL_MANAGER_CACHE_SYNC_TIMEOUT_NS;
    if (kctl__mutex_init(&m->mu) != KCTL_OK) goto fail_mu;
    if (kctl__mutex_init(&m->req.mu) != KCTL_OK) goto fail_req;
    if (kctl__mutex_init(&m->le_mu) != KCTL_OK) goto fail_le;
    if (kctl__mutex_init(&m->ctl_mu) != KCTL_OK) goto fail_ctl;
#ifndef KCTL_NO_THREADS
    if (kctl__cond_init(&m->le_cv) != KCTL_OK) goto fail_cv;
#endif
    if (desc->lease_name) {
        kctl_leader_desc ld;
        size_t n = kctl__strlen(desc->lease_name) + 1;
        memset(&ld, 0, sizeof ld);
        ld.transport = m->transport;
        ld.lease.ns = desc->lease_namespace;
        ld.name = desc->lease_name;
        ld.identity = desc->identity;
        ld.lease_ns = desc->lease_ns;
        ld.renew_deadline_ns = desc->renew_deadline_ns;
        ld.retry_ns = desc->retry_ns;
        ld.clock = m->clock;
        ld.allocator = desc->allocator;
        if (!(m->lease_name = (char *)kctl__alloc(&m->allocator, n))) rc = KCTL_ERR_NOMEM;
        else kctl__memcpy(m->lease_name, desc->lease_name, n);
        if (rc == KCTL_OK) rc = kctl_leader_create(&ld, &m->leader);
        if (rc != KCTL_OK) {
            kctl_manager_destroy(m);
            return rc;
        }
    }
    *out = m;
    return KCTL_OK;
#ifndef KCTL_NO_THREADS
fail_cv:
    kctl__mutex_deinit(&m->ctl_mu);
#endif
fail_ctl:
    kctl__mutex_deinit(&m->le_mu);
fail_le:
    kctl__mutex_deinit(&m->req.mu);
fail_req:
    kctl__mutex_deinit(&m->mu);
fail_mu:
    kctl__free(&m->allocator, m);
    return KCTL_ERR_NOMEM;
}

static kctl__mgrinf *kctl__mgr_inf(kctl_manager *m, uint32_t i) { return (kctl__mgrinf *)m->infs.items[i]; }
static kctl__mgrctl *kctl__mgr_ctl(kctl_manager *m, uint32_t i) { return (kctl__mgrctl *)m->ctls.items[i]; }

KCTL_API void kctl_manager_destroy(kctl_manager *m) {
    uint32_t i;
    if (!m) return;
    kctl_manager_stop(m);
    for (i = 0; i < m->ctls.n; i++) kctl_controller_stop(kctl__mgr_ctl(m, i)->c); /* reconciles past the grace period: wait */
    for (i = 0; i < m->infs.n; i++) kctl_informer_destroy(kctl__mgr_inf(m, i)->inf); /* before the controllers: their handlers */
    for (i = 0; i < m->ctls.n; i++) {
        kctl__mgrctl *mc = kctl__mgr_ctl(m, i);
        kctl_controller_destroy(mc->c);
        kctl__mutex_deinit(&mc->mu);
        kctl__free(&m->allocator, mc);
    }
    for (i = 0; i < m->infs.n; i++) kctl__free(&m->allocator, m->infs.items[i]);
    kctl__free(&m->allocator, m->ctls.items);
    kctl__free(&m->allocator, m->infs.items);
    kctl_leader_destroy(m->leader);
    kctl__free(&m->allocator, m->lease_name);
#ifndef KCTL_NO_THREADS
    kctl__cond_deinit(&m->le_cv);
#endif
    kctl__mutex_deinit(&m->ctl_mu);
    kctl__mutex_deinit(&m->le_mu);
    kctl__mutex_deinit(&m->req.mu);
    kctl__mutex_deinit(&m->mu);
    kctl__free(&m->allocator, m);
}

KCTL_API int kctl_manager_informer(kctl_manager *m, const kctl_resource *res, const char *label_selector,
                                   const char *field_selector, kctl_informer **out) {
    kctl_informer_desc d;
    kctl__mgrinf *mi;
    const char *g, *ns, *ls = label_selector ? label_selector : "", *fs = field_selector ? field_selector : "";
    char *p;
    size_t idn, resn, size;
    uint32_t i;
    int rc;
    if (!out) return KCTL_ERR_INVALID_ARG;
    *out = NULL;
    if (!m || !res || !res->resource) return KCTL_ERR_INVALID_ARG;
    g = res->group ? res->group : "";
    ns = res->ns ? res->ns : "";
    idn = kctl__strlen(g) + kctl__strlen(res->resource) + kctl__strlen(ns) + kctl__strlen(ls) + kctl__strlen(fs) + 5;
    resn = kctl__strlen(g) + kctl__strlen(res->resource) + kctl__strlen(ns) + 3;
    size = sizeof *mi + idn + resn + kctl__strlen(ls) + 1 + kctl__strlen(fs) + 1;
    if (!(mi = (kctl__mgrinf *)kctl__alloc(&m->allocator, size))) return KCTL_ERR_NOMEM;
    p = (char *)(mi + 1);
    mi->inf = NULL;
    mi->id = p;
    p += kctl__fmt(p, idn, "%s/%s|%s|%s|%s", g, res->resource, ns, ls, fs) + 1;
    mi->resource = p;
    p += kctl__fmt(p, resn, "%s/%s%s%s", g, res->resource, *ns ? "/" : "", ns) + 1;
    mi->labels = p;
    p += kctl__fmt(p, kctl__strlen(ls) + 1, "%s", ls) + 1;
    mi->fields = p;
    kctl__fmt(p, kctl__strlen(fs) + 1, "%s", fs);
    kctl__mutex_lock(&m->mu);
    for (i = 0; i < m->infs.n; i++)
        if (kctl__strcmp(kctl__mgr_inf(m, i)->id, mi->id) == 0) { /* shared */
            *out = kctl__mgr_inf(m, i)->inf;
            kctl__mutex_unlock(&m->mu);
            kctl__free(&m->allocator, mi);
            return KCTL_OK;
        }
    rc = kctl__mgrlist_room(&m->allocator, &m->infs);
    if (rc == KCTL_OK) {
        memset(&d, 0, sizeof d);
        d.transport = m->transport;
        d.resource = *res;
        d.label_selector = label_selector;
        d.field_selector = field_selector;
        d.clock = m->clock;
        d.resync_ns = m->resync_ns;
        d.allocator = m->allocator;
        d.wake = m->wake;
        rc = kctl_informer_create(&d, &mi->inf);
    }
    if (rc == KCTL_OK && m->started) rc = kctl_informer_start(mi->inf); /* a late one starts at once */
    if (rc == KCTL_OK) {
        m->infs.items[m->infs.n++] = mi;
        *out = mi->inf;
        mi = NULL;
    }
    kctl__mutex_unlock(&m->mu);
    if (mi) {
        kctl_informer_destroy(mi->inf);
        kctl__free(&m->allocator, mi);
    }
    return rc;
}

KCTL_API int kctl_manager_add_controller(kctl_manager *m, const kctl_controller_desc *desc, kctl_controller **out) {
    kctl_controller_desc d;
    kctl__mgrctl *mc = NULL;
    kctl_controller *c = NULL;
    const char *name;
    size_t n;
    uint32_t i;
    int rc = KCTL_OK;
    if (out) *out = NULL;
    if (!m || !desc || !desc->reconcile) {
        if (desc) kctl_limiter_destroy(desc->limiter);
        return KCTL_ERR_INVALID_ARG;
    }
    d = *desc;
    if (!d.transport.vt) d.transport = m->transport;
    if (!d.clock.now_fn) d.clock = m->clock;
    if (!d.logger.func) d.logger = m->logger;
    name = d.name ? d.name : "";
    n = kctl__strlen(name) + 1;
    if (!(mc = (kctl__mgrctl *)kctl__alloc(&m->allocator, sizeof *mc + n))) {
        kctl_limiter_destroy(d.limiter);
        return KCTL_ERR_NOMEM;
    }
    memset(mc, 0, sizeof *mc);
    kctl__memcpy((char *)(mc + 1), name, n);
    mc->name = (const char *)(mc + 1);
    mc->reconcile = d.reconcile;
    mc->user_data = d.user_data;
    mc->clock = d.clock;
    mc->workers = d.workers ? d.workers : 1;
    if (kctl__mutex_init(&mc->mu) != KCTL_OK) {
        kctl__free(&m->allocator, mc);
        kctl_limiter_destroy(d.limiter);
        return KCTL_ERR_NOMEM;
    }
    d.reconcile = kctl__mgr_reconcile; /* times the user's */
    d.user_data = mc;
    kctl__mutex_lock(&m->ctl_mu);
    kctl__mutex_lock(&m->mu);
    for (i = 0; i < m->ctls.n && *name; i++)
        if (kctl__strcmp(kctl__mgr_ctl(m, i)->name, name) == 0) rc = KCTL_ERR_EXISTS; /* one name, one set of metrics */
    if (rc == KCTL_OK) rc = kctl__mgrlist_room(&m->allocator, &m->ctls);
    if (rc == KCTL_OK) rc = kctl_controller_create(&d, &mc->c); /* it owns the limiter, even when it fails */
    else kctl_limiter_destroy(d.limiter);
    if (rc == KCTL_OK) {
        m->ctls.items[m->ctls.n++] = mc;
        c = mc->c;
        if (out) *out = c;
    }
    if (c && m->controllers_up) {
        uint64_t sync_ns = m->sync_timeout_ns;
        kctl__mutex_unlock(&m->mu);
        rc = kctl_controller_start(c, sync_ns); /* a late one starts at once */
    } else {
        kctl__mutex_unlock(&m->mu);
    }
    kctl__mutex_unlock(&m->ctl_mu);
    if (!c) {
        kctl__mutex_deinit(&mc->mu);
        kctl__free(&m->allocator, mc);
    }
    return rc;
}

/* Controller i, or NULL past the last (they are only ever added). */
static kctl_controller *kctl__mgr_ctl_at(kctl_manager *m, uint32_t i) {
    kctl_controller *c;
    kctl__mutex_lock(&m->mu);
    c = i < m->ctls.n ? kctl__mgr_ctl(m, i)->c : NULL;
    kctl__mutex_unlock(&m->mu);
    return c;
}

/* ctl_mu held (so no controller is added meanwhile). */
static void kctl__mgr_set_up(kctl_manager *m, bool up) {
    kctl__mutex_lock(&m->mu);
    m->controllers_up = up;
    kctl__mutex_unlock(&m->mu);
}

/* ctl_mu held. */
static int kctl__mgr_start_controllers(kctl_manager *m) {
    kctl_controller *c;
    uint32_t i;
    int rc = KCTL_OK;
    /* controllers wait for the caches they watch, then start their workers */
    for (i = 0; rc == KCTL_OK && (c = kctl__mgr_ctl_at(m, i)) != NULL; i++) rc = kctl_controller_start(c, m->sync_timeout_ns);
    return rc;
}

/* Stop every controller within one grace period (real time). ctl_mu held. */
static int kctl__mgr_stop_controllers(kctl_manager *m) {
    kctl_controller *c;
    uint64_t end = kctl__add_sat(kctl_clock_now(NULL), m->grace_ns), now;
    uint32_t i;
    int rc = KCTL_OK;
    for (i = 0; (c = kctl__mgr_ctl_at(m, i)) != NULL; i++) {
        now = kctl_clock_now(NULL);
        if (kctl_controller_stop_timeout(c, m->grace_ns == UINT64_MAX ? UINT64_MAX : end > now ? end - now : 0) != KCTL_OK)
            rc = KCTL_ERR_TIMEOUT;
    }
    return rc;
}

#ifndef KCTL_NO_THREADS
static void kctl__mgr_le_wake(void *arg) {
    kctl_manager *m = (kctl_manager *)arg;
    kctl__mutex_lock(&m->le_mu);
    kctl__cond_broadcast(&m->le_cv);
    kctl__mutex_unlock(&m->le_mu);
}

static bool kctl__mgr_stopping(kctl_manager *m) {
    bool s;
    kctl__mutex_lock(&m->le_mu);
    s = m->le_stopping || m->le_stop;
    kctl__mutex_unlock(&m->le_mu);
    return s;
}

/* The leader-election thread: try when due (on the manager's clock,
   virtual or not); lead -> start the controllers (unless stop has begun);
   lose -> stop them, for good. It renews until stop ends it. */
static void *kctl__mgr_le_main(void *arg) {
    kctl_manager *m = (kctl_manager *)arg;
    bool stop = false;
    if (m->clock.subscribe_fn) m->clock.subscribe_fn(&m->le_waiter, m->clock.user_data);
    while (!stop) {
        bool leading = false, up;
        uint64_t next = 0;
        kctl_leader_step(m->leader, &leading, &next);
        kctl__mutex_lock(&m->mu);
        m->le.leading = leading;
        m->le.terms = kctl_leader_terms(m->leader);
        m->le.steps++;
        m->le.next_ns = next;
        up = m->controllers_up;
        kctl__mutex_unlock(&m->mu);
        kctl__mutex_lock(&m->le_mu);
        stop = m->le_stop;
        kctl__mutex_unlock(&m->le_mu);
        if (stop) break;
        if (leading && !up) {
            kctl__mutex_lock(&m->ctl_mu);
            if (!m->controllers_up && !kctl__mgr_stopping(m)) {
                kctl__mgr_set_up(m, true);
                kctl__mgr_start_controllers(m);
            }
            kctl__mutex_unlock(&m->ctl_mu);
        } else if (!leading && up) {
            kctl__mutex_lock(&m->ctl_mu);
            if (m->controllers_up) { /* not stopped by stop meanwhile: lost */
                kctl__log(&m->logger, KCTL_LOG_WARN, KCTL_LOGITEM_MANAGER_LOST_LEASE);
                kctl__mgr_stop_controllers(m);
                kctl__mgr_set_up(m, false);
                kctl__mutex_lock(&m->mu);
                m->le.lost = true;
                kctl__mutex_unlock(&m->mu);
                stop = true;
            }
            kctl__mutex_unlock(&m->ctl_mu);
        }
        if (stop) break;
        kctl__mutex_lock(&m->le_mu); /* now is read under le_mu: an advance cannot slip between it and the wait */
        for (;;) {
            uint64_t now = kctl_clock_now(&m->clock);
            if ((stop = m->le_stop) || now >= next) break;
            if (m->clock.subscribe_fn) kctl__cond_wait(&m->le_cv, &m->le_mu); /* until the clock moves */
            else kctl__cond_wait_for(&m->le_cv, &m->le_mu, next - now);
        }
        kctl__mutex_unlock(&m->le_mu);
    }
    if (m->clock.subscribe_fn) m->clock.unsubscribe_fn(&m->le_waiter, m->clock.user_data);
    return NULL;
}
#endif

KCTL_API int kctl_manager_start(kctl_manager *m, uint64_t cache_sync_timeout_ns) {
    uint32_t i;
    int rc = KCTL_OK;
    if (!m) return KCTL_ERR_INVALID_ARG;
    kctl__mutex_lock(&m->mu);
    if (m->started || m->stepped) rc = KCTL_ERR_EXISTS; /* stepped: the program's loop runs it */
    for (i = 0; i < m->infs.n && rc == KCTL_OK; i++) rc = kctl_informer_start(kctl__mgr_inf(m, i)->inf);
    if (rc == KCTL_OK) {
        m->started = true;
        m->sync_timeout_ns = cache_sync_timeout_ns ? cache_sync_timeout_ns : m->default_sync_ns;
    }
    kctl__mutex_unlock(&m->mu);
    if (rc != KCTL_OK) {
        if (rc != KCTL_ERR_EXISTS) kctl_manager_stop(m);
        return rc;
    }
    if (m->leader) { /* the controllers start when (if) this process leads */
#ifndef KCTL_NO_THREADS
        m->le_waiter.wake = kctl__mgr_le_wake;
        m->le_waiter.arg = m;
        kctl__mutex_lock(&m->le_mu);
        m->le_stop = false;
        rc = kctl__thread_start(&m->le_thread, kctl__mgr_le_main, m);
        if (rc == KCTL_OK) m->le_running = true;
        kctl__mutex_unlock(&m->le_mu);
#else
        rc = KCTL_ERR_INVALID_ARG;
#endif
    } else {
        kctl__mutex_lock(&m->ctl_mu);
        rc = kctl__mgr_start_controllers(m);
        kctl__mgr_set_up(m, rc == KCTL_OK);
        kctl__mutex_unlock(&m->ctl_mu);
    }
    if (rc != KCTL_OK) kctl_manager_stop(m);
    return rc;
}

KCTL_API int kctl_manager_stop(kctl_manager *m) {
    uint32_t i;
    bool joined = false;
    int rc;
    if (!m) return KCTL_ERR_INVALID_ARG;
    kctl__mutex_lock(&m->le_mu);
    m->le_stopping = true; /* the election thread starts nothing now, and renews while the controllers drain */
    kctl__mutex_unlock(&m->le_mu);
    kctl__mutex_lock(&m->ctl_mu);
    rc = kctl__mgr_stop_controllers(m);
    kctl__mgr_set_up(m, false);
    kctl__mutex_unlock(&m->ctl_mu);
#ifndef KCTL_NO_THREADS
    {
        bool running;
        kctl__mutex_lock(&m->le_mu);
        running = m->le_running; /* one stopper joins the thread, and alone may touch the elector */
        m->le_running = false;
        m->le_stop = true;
        kctl__cond_broadcast(&m->le_cv);
        kctl__mutex_unlock(&m->le_mu);
        if (running) {
            kctl__thread_join(m->le_thread);
            joined = true;
        }
    }
#endif
    if ((joined || (m->stepped && m->leader)) && m->release_on_stop && rc == KCTL_OK && kctl_leader_release(m->leader) != KCTL_OK)
        kctl__log(&m->logger, KCTL_LOG_WARN, KCTL_LOGITEM_MANAGER_RELEASE_FAILED);
    kctl__mutex_lock(&m->mu);
    for (i = 0; i < m->infs.n; i++) kctl_informer_stop(kctl__mgr_inf(m, i)->inf);
    m->started = false;
    m->le.leading = false;
    kctl__mutex_unlock(&m->mu);
    return rc;
}

/* Informer i, or NULL past the last (they are only ever added). */
static kctl_informer *kctl__mgr_inf_at(kctl_manager *m, uint32_t i) {
    kctl_informer *inf;
    kctl__mutex_lock(&m->mu);
    inf = i < m->infs.n ? kctl__mgr_inf(m, i)->inf : NULL;
    kctl__mutex_unlock(&m->mu);
    return inf;
}

/* The step's leader election: try when due; leading lets the controllers
   reconcile; losing the Lease stops them for good (SHUTDOWN). */
static int kctl__mgr_step_leader(kctl_manager *m, uint64_t *dl) {
    bool leading = false;
    uint64_t next = 0;
    if (!m->leader) {
        m->step_up = true;
        return KCTL_OK;
    }
    if (kctl_clock_now(&m->clock) >= m->le_due) {
        kctl_leader_step(m->leader, &leading, &next); /* its failures are its own: it tries again at next */
        m->le_due = next;
        kctl__mutex_lock(&m->mu);
        m->le.leading = leading;
        m->le.terms = kctl_leader_terms(m->leader);
        m->le.steps++;
        m->le.next_ns = next;
        kctl__mutex_unlock(&m->mu);
        if (leading) m->step_up = true;
        else if (m->step_up) { /* led, lost: the controllers stop for good, as controller-runtime exits */
            kctl__log(&m->logger, KCTL_LOG_WARN, KCTL_LOGITEM_MANAGER_LOST_LEASE);
            kctl__mutex_lock(&m->ctl_mu);
            kctl__mgr_stop_controllers(m);
            kctl__mutex_unlock(&m->ctl_mu);
            m->step_up = false;
            kctl__mutex_lock(&m->mu);
            m->le.lost = true;
            kctl__mutex_unlock(&m->mu);
            return KCTL_ERR_SHUTDOWN;
        }
    }
    if (m->le_due < *dl) *dl = m->le_due;
    return KCTL_OK;
}

KCTL_API int kctl_manager_step(kctl_manager *m, size_t budget, uint64_t *next_deadline) {
    uint64_t dl = UINT64_MAX;
    kctl_informer *inf;
    kctl_controller *c;
    uint32_t i, n;
    int rc = KCTL_OK;
    bool stopping;
    if (next_deadline) *next_deadline = UINT64_MAX;
    if (!m) return KCTL_ERR_INVALID_ARG;
    kctl__mutex_lock(&m->mu);
    if (m->started) rc = KCTL_ERR_EXISTS;
    else if (m->le.lost) rc = KCTL_ERR_SHUTDOWN;
    else m->stepped = true;
    kctl__mutex_unlock(&m->mu);
    kctl__mutex_lock(&m->le_mu);
    stopping = m->le_stopping || m->le_stop;
    kctl__mutex_unlock(&m->le_mu);
    if (rc == KCTL_OK && stopping) rc = KCTL_ERR_SHUTDOWN;
    if (rc != KCTL_OK) return rc;
    /* 1. the Lease */
    if ((rc = kctl__mgr_step_leader(m, &dl)) != KCTL_OK) return rc;
    /* 2. the informers: what their transports have ready, into the caches */
    for (i = 0; (inf = kctl__mgr_inf_at(m, i)) != NULL; i++) {
        uint64_t t = UINT64_MAX;
        kctl_informer_step(inf, 0, &t); /* SHUTDOWN only once destroyed */
        if (t < dl) dl = t;
    }
    /* 3. the controllers, in turns, on synced caches, within the budget */
    if (m->step_up) {
        kctl__mutex_lock(&m->mu);
        n = m->ctls.n;
        kctl__mutex_unlock(&m->mu);
        for (i = 0; i < n; i++) {
            size_t done = 0;
            c = kctl__mgr_ctl_at(m, (m->turn + i) % n);
            if (!c || !kctl__ctl_synced(c)) continue; /* its informers' deadlines stand for it */
            if (budget) kctl_controller_step(c, budget, &done);
            budget -= done;
            kctl__ctl_due(c, &dl);
        }
        if (n) m->turn = (m->turn + 1) % n;
    }
    if (next_deadline) *next_deadline = dl;
    return KCTL_OK;
}

KCTL_API bool kctl_manager_is_leader(kctl_manager *m) {
    bool l;
    if (!m) return false;
    kctl__mutex_lock(&m->mu);
    l = m->le.leading;
    kctl__mutex_unlock(&m->mu);
    return l;
}

KCTL_API bool kctl_manager_lost_lease(kctl_manager *m) {
    bool l;
    if (!m) return false;
    kctl__mutex_lock(&m->mu);
    l = m->le.lost;
    kctl__mutex_unlock(&m->mu);
    return l;
}

KCTL_API void kctl_manager_read_leader(kctl_manager *m, kctl_manager_leader_info *out) {
    if (!out) return;
    memset(out, 0, sizeof *out);
    if (!m) return;
    kctl__mutex_lock(&m->mu);
    *out = m->le;
    kctl__mutex_unlock(&m->mu);
}

KCTL_API int kctl_manager_run(kctl_manager *m, uint64_t cache_sync_timeout_ns) {
#if defined(KCTL_NO_THREADS) || defined(KCTL_PORT_CUSTOM) /* no signals: start and stop */
    (void)m;
    (void)cache_sync_timeout_ns;
    return KCTL_ERR_INVALID_ARG;
#else
    sigset_t set, old;
    int sig = 0, rc;
    if (!m) return KCTL_ERR_INVALID_ARG;
    sigemptyset(&set);
    sigaddset(&set, SIGINT);
    sigaddset(&set, SIGTERM);
    pthread_sigmask(SIG_BLOCK, &set, &old); /* every thread started from here on inherits it */
    rc = kctl_manager_start(m, cache_sync_timeout_ns);
    while (rc == KCTL_OK) { /* a signal, or (with leader election) a lost lease */
        struct timespec ts;
        ts.tv_sec = 0;
        ts.tv_nsec = 100000000;
        sig = sigtimedwait(&set, NULL, &ts);
        if (sig == SIGINT || sig == SIGTERM) break;
        if (kctl_manager_lost_lease(m)) rc = KCTL_ERR_SHUTDOWN;
    }
    sig = kctl_manager_stop(m);
    if (rc == KCTL_OK) rc = sig; /* TIMEOUT: reconciles outlived the grace period */
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    return rc;
#endif
}

KCTL_API int kctl_manager_run_until_signal(kctl_manager *m) { return kctl_manager_run(m, 0); }

#ifdef KCTL_NO_METRICS
/* Compiled out: no Prometheus text (the counters behind it remain). */
KCTL_API int kctl_manager_metrics(kctl_manager *m, char *buf, size_t cap, size_t *len) {
    (void)m; (void)buf; (void)cap;
    if (len) *len = 0;
    return KCTL_ERR_UNSUPPORTED;
}
#else
/* ---- metrics: Prometheus' text exposition format */
typedef struct kctl__pm {
    kctl_jw w;                     /* a growable byte buffer */
    const char *name, *type, *help; /* the family being written */
    bool head;                     /* its # HELP and # TYPE are written */
} kctl__pm;

static void kctl__pm_put(kctl__pm *p, const char *s) { kctl__jw_put(&p->w, s, kctl__strlen(s)); }

/* The next family: its header goes out with its first sample, so a family
   with no sample leaves nothing. */
static void kctl__pm_family(kctl__pm *p, const char *name, const char *type, const char *help) {
    p->name = name;
    p->type = type;
    p->help = help;
    p->head = false;
}

/* A label value with \, " and newline escaped, as the format requires. */
static void kctl__pm_escaped(kctl__pm *p, const char *s) {
    const char *run = s;
    for (; *s; s++) {
        const char *esc = *s == '\\' ? "\\\\" : *s == '"' ? "\\\"" : *s == '\n' ? "\\n" : NULL;
        if (!esc) continue;
        kctl__jw_put(&p->w, run, (size_t)(s - run));
        kctl__pm_put(p, esc);
        run = s + 1;
    }
    kctl__jw_put(&p->w, run, (size_t)(s - run));
}

/* One sample of the family: name suffix, labels as name/value pairs (a
   NULL or "" value leaves its label out, as Prometheus reads an empty one),
   and the value. */
static void kctl__pm_sample(kctl__pm *p, const char *suffix, const char *const *labels, int npairs, const char *value) {
    int i;
    bool first = true;
    if (!p->head) {
        kctl__pm_put(p, "# HELP ");
        kctl__pm_put(p, p->name);
        kctl__pm_put(p, " ");
        kctl__pm_put(p, p->help);
        kctl__pm_put(p, "\n# TYPE ");
        kctl__pm_put(p, p->name);
        kctl__pm_put(p, " ");
        kctl__pm_put(p, p->type);
        kctl__pm_put(p, "\n");
        p->head = true;
    }
    kctl__pm_put(p, p->name);
    kctl__pm_put(p, suffix);
    for (i = 0; i < npairs; i++) {
        if (!labels[2 * i + 1] || !labels[2 * i + 1][0]) continue;
        kctl__pm_put(p, first ? "{" : ",");
        kctl__pm_put(p, labels[2 * i]);
        kctl__pm_put(p, "=\"");
        kctl__pm_escaped(p, labels[2 * i + 1]);
        kctl__pm_put(p, "\"");
        first = false;
    }
    kctl__pm_put(p, first ? " " : "} ");
    kctl__pm_put(p, value);
    kctl__pm_put(p, "\n");
}

static const char *kctl__pm_u64(char buf[24], uint64_t v) {
    kctl__fmt(buf, 24, "%llu", (unsigned long long)v);
    return buf;
}
/* Seconds from ns, exactly, whatever the C locale's decimal point. */
static const char *kctl__pm_sec(char buf[32], uint64_t ns) {
    kctl__fmt(buf, 32, "%llu.%09llu", (unsigned long long)(ns / UINT64_C(1000000000)), (unsigned long long)(ns % UINT64_C(1000000000)));
    return buf;
}
static void kctl__pm_one(kctl__pm *p, const char *label, const char *value, const char *num) {
    const char *l[2];
    l[0] = label;
    l[1] = value;
    kctl__pm_sample(p, "", l, 1, num);
}

/* A histogram sample set from per-bucket counts: cumulative buckets in
   increasing le order, +Inf equal to count, then _sum and _count. */
static void kctl__pm_hist(kctl__pm *p, const char *label, const char *value, const char *const *le,
                          const uint64_t *per_bucket, int n, uint64_t count, uint64_t sum_ns) {
    const char *l[4];
    char num[32];
    uint64_t cum = 0;
    int i;
    l[0] = label;
    l[1] = value;
    l[2] = "le";
    for (i = 0; i < n; i++) {
        cum += per_bucket[i];
        l[3] = le[i];
        kctl__pm_sample(p, "_bucket", l, 2, kctl__pm_u64(num, cum < count ? cum : count));
    }
    l[3] = "+Inf";
    kctl__pm_sample(p, "_bucket", l, 2, kctl__pm_u64(num, count));
    kctl__pm_sample(p, "_sum", l, 1, kctl__pm_sec(num, sum_ns));
    kctl__pm_sample(p, "_count", l, 1, kctl__pm_u64(num, count));
}

/* A named controller's figures, read at once. */
typedef struct kctl__mgrsnap {
    const kctl__mgrctl *mc;
    kctl_queue_stats qs;
    kctl_controller_stats cs;
    uint32_t active;
    uint64_t count, sum_ns, buckets[KCTL__MGR_RT_N];
} kctl__mgrsnap;

KCTL_API int kctl_manager_metrics(kctl_manager *m, char *buf, size_t cap, size_t *len) {
    static const char *const results[4] = { "success", "error", "requeue", "requeue_after" };
    static const char *const events[4] = { "ADDED", "MODIFIED", "DELETED", "BOOKMARK" };
    kctl__pm p;
    kctl__mgrsnap *cs = NULL;
    kctl_reflector_stats *rs = NULL;
    const kctl__mgrinf **ri = NULL;
    uint64_t req[KCTL__V_N][KCTL__CODES];
    const char *l[8];
    char num[32];
    uint32_t i, nc = 0, ni = 0, k;
    bool leading = false;
    int rc = KCTL_OK, v, c;
    if (len) *len = 0;
    if (!m || (!buf && cap)) return KCTL_ERR_INVALID_ARG;
    memset(&p, 0, sizeof p);
    kctl_jw_init_growable(&p.w, &m->allocator);
    /* read everything first: the text is written outside the locks */
    kctl__mutex_lock(&m->mu);
    if ((m->ctls.n && !(cs = (kctl__mgrsnap *)kctl__alloc(&m->allocator, m->ctls.n * sizeof *cs))) ||
        (m->infs.n && (!(rs = (kctl_reflector_stats *)kctl__alloc(&m->allocator, m->infs.n * sizeof *rs)) ||
                       !(ri = (const kctl__mgrinf **)kctl__alloc(&m->allocator, m->infs.n * sizeof *ri)))))
        rc = KCTL_ERR_NOMEM;
    for (i = 0; rc == KCTL_OK && i < m->ctls.n; i++) {
        kctl__mgrctl *mc = kctl__mgr_ctl(m, i);
        kctl__mgrsnap *s = &cs[nc];
        if (!mc->name[0]) continue; /* unnamed: no metrics of its own */
        s->mc = mc;
        kctl_queue_read_stats(kctl_controller_queue(mc->c), &s->qs);
        kctl_controller_read_stats(mc->c, &s->cs);
        kctl__mutex_lock(&mc->mu);
        s->active = mc->active;
        s->count = mc->count;
        s->sum_ns = mc->sum_ns;
        kctl__memcpy(s->buckets, mc->buckets, sizeof s->buckets);
        kctl__mutex_unlock(&mc->mu);
        nc++;
    }
    for (i = 0; rc == KCTL_OK && i < m->infs.n; i++, ni++) {
        ri[i] = kctl__mgr_inf(m, i);
        kctl_informer_read_stats(ri[i]->inf, &rs[i]);
    }
    leading = m->le.leading;
    kctl__mutex_unlock(&m->mu);
    kctl__mutex_lock(&m->req.mu);
    kctl__memcpy(req, m->req.n, sizeof req);
    kctl__mutex_unlock(&m->req.mu);

    /* client-go's workqueue families, per named controller */
    kctl__pm_family(&p, "workqueue_depth", "gauge", "Keys waiting in the workqueue, not yet handed to a worker.");
    for (i = 0; i < nc; i++) kctl__pm_one(&p, "name", cs[i].mc->name, kctl__pm_u64(num, cs[i].qs.depth));
    kctl__pm_family(&p, "workqueue_adds_total", "counter", "Keys added to the workqueue.");
    for (i = 0; i < nc; i++) kctl__pm_one(&p, "name", cs[i].mc->name, kctl__pm_u64(num, cs[i].qs.adds_total));
    kctl__pm_family(&p, "workqueue_retries_total", "counter", "Keys added to the workqueue again after a delay.");
    for (i = 0; i < nc; i++) kctl__pm_one(&p, "name", cs[i].mc->name, kctl__pm_u64(num, cs[i].qs.retries_total));
    kctl__pm_family(&p, "workqueue_refused_total", "counter", "Keys refused because the workqueue was full (max_keys).");
    for (i = 0; i < nc; i++) kctl__pm_one(&p, "name", cs[i].mc->name, kctl__pm_u64(num, cs[i].qs.refused_total));
    kctl__pm_family(&p, "kctl_workqueue_low_depth", "gauge", "Of workqueue_depth, keys waiting at low priority (lists, relists, resyncs).");
    for (i = 0; i < nc; i++) kctl__pm_one(&p, "name", cs[i].mc->name, kctl__pm_u64(num, cs[i].qs.low));
    kctl__pm_family(&p, "kctl_workqueue_cancelled_total", "counter", "Delayed adds a plain add cancelled or merged (pending_after).");
    for (i = 0; i < nc; i++) kctl__pm_one(&p, "name", cs[i].mc->name, kctl__pm_u64(num, cs[i].qs.cancelled_total));
    kctl__pm_family(&p, "workqueue_queue_duration_seconds", "histogram", "Seconds a key waits in the workqueue before a worker takes it.");
    for (i = 0; i < nc; i++)
        kctl__pm_hist(&p, "name", cs[i].mc->name, kctl__mgr_wq_le, cs[i].qs.queue_duration.buckets,
                      KCTL_HIST_BUCKETS, cs[i].qs.queue_duration.count, cs[i].qs.queue_duration.sum_ns);
    kctl__pm_family(&p, "workqueue_work_duration_seconds", "histogram", "Seconds a worker takes to process a key.");
    for (i = 0; i < nc; i++)
        kctl__pm_hist(&p, "name", cs[i].mc->name, kctl__mgr_wq_le, cs[i].qs.work_duration.buckets,
                      KCTL_HIST_BUCKETS, cs[i].qs.work_duration.count, cs[i].qs.work_duration.sum_ns);
    kctl__pm_family(&p, "workqueue_unfinished_work_seconds", "gauge",
                    "Seconds of work in progress not yet in work_duration; a steady rise means stuck workers.");
    for (i = 0; i < nc; i++) kctl__pm_one(&p, "name", cs[i].mc->name, kctl__pm_sec(num, cs[i].qs.unfinished_work_ns));
    kctl__pm_family(&p, "workqueue_longest_running_processor_seconds", "gauge",
                    "Seconds the longest-running worker has spent on its key.");
    for (i = 0; i < nc; i++) kctl__pm_one(&p, "name", cs[i].mc->name, kctl__pm_sec(num, cs[i].qs.longest_running_ns));

    /* controller-runtime's families */
    kctl__pm_family(&p, "controller_runtime_reconcile_total", "counter", "Reconciles per controller, by result.");
    for (i = 0; i < nc; i++) {
        uint64_t n[4];
        n[0] = cs[i].cs.success;
        n[1] = cs[i].cs.error; /* terminal errors included */
        n[2] = cs[i].cs.requeue;
        n[3] = cs[i].cs.requeue_after;
        for (k = 0; k < 4; k++) {
            l[0] = "controller";
            l[1] = cs[i].mc->name;
            l[2] = "result";
            l[3] = results[k];
            kctl__pm_sample(&p, "", l, 2, kctl__pm_u64(num, n[k]));
        }
    }
    kctl__pm_family(&p, "controller_runtime_reconcile_errors_total", "counter", "Reconciles per controller that returned an error.");
    for (i = 0; i < nc; i++) kctl__pm_one(&p, "controller", cs[i].mc->name, kctl__pm_u64(num, cs[i].cs.error));
    kctl__pm_family(&p, "controller_runtime_terminal_reconcile_errors_total", "counter",
                    "Reconciles per controller that returned a terminal error (not retried).");
    for (i = 0; i < nc; i++) kctl__pm_one(&p, "controller", cs[i].mc->name, kctl__pm_u64(num, cs[i].cs.terminal));
    kctl__pm_family(&p, "controller_runtime_reconcile_time_seconds", "histogram", "Seconds per reconcile, per controller.");
    for (i = 0; i < nc; i++)
        kctl__pm_hist(&p, "controller", cs[i].mc->name, kctl__mgr_rt_le, cs[i].buckets, KCTL__MGR_RT_N, cs[i].count, cs[i].sum_ns);
    kctl__pm_family(&p, "controller_runtime_max_concurrent_reconciles", "gauge", "Workers per controller: reconciles it runs at once at most.");
    for (i = 0; i < nc; i++) kctl__pm_one(&p, "controller", cs[i].mc->name, kctl__pm_u64(num, cs[i].mc->workers));
    kctl__pm_family(&p, "controller_runtime_active_workers", "gauge", "Reconciles running now, per controller.");
    for (i = 0; i < nc; i++) kctl__pm_one(&p, "controller", cs[i].mc->name, kctl__pm_u64(num, cs[i].active));
    /* kctl's own: offline mode, hold_backoff, the hot-loop detector */
    kctl__pm_family(&p, "kctl_controller_offline", "gauge", "1 while the controller finds its store unreachable (offline mode).");
    for (i = 0; i < nc; i++) kctl__pm_one(&p, "controller", cs[i].mc->name, kctl__pm_u64(num, cs[i].cs.offline ? 1u : 0u));
    kctl__pm_family(&p, "kctl_controller_parked_keys", "gauge", "Keys parked until the store is back (offline mode).");
    for (i = 0; i < nc; i++) kctl__pm_one(&p, "controller", cs[i].mc->name, kctl__pm_u64(num, cs[i].cs.parked_now));
    kctl__pm_family(&p, "kctl_controller_hot_loops_total", "counter", "Times a key was found reconciling again and again with no new spec.");
    for (i = 0; i < nc; i++) kctl__pm_one(&p, "controller", cs[i].mc->name, kctl__pm_u64(num, cs[i].cs.hot_loops));

    /* the store, the reflectors, the lease */
    kctl__pm_family(&p, "kctl_store_requests_total", "counter", "Requests to the store, by verb and result code.");
    for (v = 0; v < KCTL__V_N; v++)
        for (c = 0; c < KCTL__CODES; c++) {
            if (!req[v][c]) continue;
            l[0] = "verb";
            l[1] = kctl__verb_names[v];
            l[2] = "code";
            l[3] = kctl__code_names[c] + (c ? 4 : 0); /* OK, NOT_FOUND, ... */
            kctl__pm_sample(&p, "", l, 2, kctl__pm_u64(num, req[v][c]));
        }
    for (k = 0; k < 4; k++) {
        static const char *const names[4] = { "kctl_reflector_lists_total", "kctl_reflector_relists_total",
                                               "kctl_reflector_watch_restarts_total", "kctl_reflector_events_total" };
        static const char *const helps[4] = { "Complete lists of the informer's reflector, the first included.",
                                              "Lists after the first: the watch's version was gone.",
                                              "Watches opened again after they ended, broke or stalled.",
                                              "Watch events received, by type." };
        kctl__pm_family(&p, names[k], "counter", helps[k]);
        for (i = 0; i < ni; i++) {
            uint64_t ev[4];
            uint32_t e, ne = k == 3 ? 4 : 1;
            ev[0] = k == 0 ? rs[i].lists : k == 1 ? rs[i].relists : k == 2 ? rs[i].watch_restarts : rs[i].added;
            ev[1] = rs[i].modified;
            ev[2] = rs[i].deleted;
            ev[3] = rs[i].bookmarks;
            for (e = 0; e < ne; e++) {
                l[0] = "resource";
                l[1] = ri[i]->resource;
                l[2] = "label_selector";
                l[3] = ri[i]->labels;
                l[4] = "field_selector";
                l[5] = ri[i]->fields;
                l[6] = "type";
                l[7] = events[e];
                kctl__pm_sample(&p, "", l, k == 3 ? 4 : 3, kctl__pm_u64(num, ev[e]));
            }
        }
    }
    if (m->leader) {
        kctl__pm_family(&p, "leader_election_master_status", "gauge",
                        "1 when this process holds the lease named by name, else 0.");
        kctl__pm_one(&p, "name", m->lease_name, leading ? "1" : "0");
    }
    kctl__free(&m->allocator, cs);
    kctl__free(&m->allocator, rs);
    kctl__free(&m->allocator, (void *)ri);
    if (rc == KCTL_OK && p.w.err) rc = p.w.err;
    if (rc == KCTL_OK) {
        if (len) *len = p.w.len;
        if (p.w.len >= cap) rc = KCTL_ERR_TOO_LARGE;
        else kctl__memcpy(buf, p.w.buf ? p.w.buf : "", p.w.len + 1);
    }
    kctl_jw_free(&p.w);
    return rc;
}
#endif /* KCTL_NO_METRICS */

/* ------------------------------------------- >>reported REPORTED STATE */
/* One field set: name, NUL, then its JSON value (len bytes), in one block. */
typedef struct kctl__rep_field {
    char *block;
    size_t name_len, len;
} kctl__rep_field;

struct kctl_reported {
    kctl_transport t;
    kctl_resource res;
    const char *name;
    char *strings; /* the copies res and name point into */
    kctl_allocator allocator;
    kctl_logger logger;
    uint64_t interval, tolerance; /* the bucket, as a GCRA: per_ns / writes, (burst - 1) * interval */
    uint32_t max_conflicts;
    uint64_t conflict_backoff, b_initial, b_max;
    kctl__mutex mu; /* the fields, the sequence numbers and the stats */
    kctl__rep_field *fields;
    uint32_t nfields, cap;
    char *whole;       /* a whole status set, or NULL */
    size_t whole_len;
    uint64_t seq;      /* sets so far */
    uint64_t done_seq; /* the sets the store has (written, or found there) */
    kctl_reported_stats stats;
    /* the stepping thread's */
    kctl_obj *cur;       /* the object as last read or written (NULL: read it) */
    uint64_t tat;        /* the bucket's theoretical arrival time */
    uint64_t not_before; /* backoff */
    uint64_t backoff;    /* the next error backoff */
    uint32_t conflicts;  /* in a row */
};

KCTL_API kctl_reported_desc kctl_reported_desc_init(void) {
    kctl_reported_desc d;
    memset(&d, 0, sizeof d);
    d.writes = 1;
    d.per_ns = KCTL_SEC(1);
    d.burst = 1;
    d.max_conflicts = 5;
    d.conflict_backoff_ns = KCTL_MS(10);
    d.backoff_initial_ns = KCTL_SEC(1);
    d.backoff_max_ns = KCTL_SEC(60);
    return d;
}

KCTL_API int kctl_reported_create(const kctl_reported_desc *desc, kctl_reported **out) {
    kctl_reported_desc d;
    kctl_reported *r;
    const char *parts[5];
    size_t i, total = 0;
    char *p;
    if (!out) return KCTL_ERR_INVALID_ARG;
    *out = NULL;
#ifdef KCTL_NO_MERGE_PATCH
    if (out) return KCTL_ERR_UNSUPPORTED; /* fields are merged into the status by merge patch */
#endif
    if (!desc || !desc->transport.vt || !desc->resource.resource || !*desc->resource.resource || !desc->name || !*desc->name)
        return KCTL_ERR_INVALID_ARG;
    d = *desc;
    if ((!d.allocator.alloc_fn) != (!d.allocator.free_fn) || (!d.writes) != (!d.per_ns)) return KCTL_ERR_INVALID_ARG;
    if (!d.writes) { d.writes = 1; d.per_ns = KCTL_SEC(1); }
    if (!d.burst) d.burst = 1;
    if (!d.max_conflicts) d.max_conflicts = 5;
    if (!d.conflict_backoff_ns) d.conflict_backoff_ns = KCTL_MS(10);
    if (!d.backoff_initial_ns) d.backoff_initial_ns = KCTL_SEC(1);
    if (!d.backoff_max_ns) d.backoff_max_ns = KCTL_SEC(60);
    parts[0] = d.resource.group;
    parts[1] = d.resource.version;
    parts[2] = d.resource.resource;
    parts[3] = d.resource.ns;
    parts[4] = d.name;
    for (i = 0; i < 5; i++) total += (parts[i] ? kctl__strlen(parts[i]) : 0) + 1;
    if (!(r = (kctl_reported *)kctl__alloc(&d.allocator, sizeof *r))) return KCTL_ERR_NOMEM;
    memset(r, 0, sizeof *r);
    if (!(r->strings = (char *)kctl__alloc(&d.allocator, total)) || kctl__mutex_init(&r->mu) != KCTL_OK) {
        kctl__free(&d.allocator, r->strings);
        kctl__free(&d.allocator, r);
        return KCTL_ERR_NOMEM;
    }
    for (i = 0, p = r->strings; i < 5; i++) { /* NULL stays NULL */
        size_t n = parts[i] ? kctl__strlen(parts[i]) : 0;
        if (parts[i]) kctl__memcpy(p, parts[i], n);
        p[n] = '\0';
        parts[i] = parts[i] ? p : NULL;
        p += n + 1;
    }
    r->t = d.transport;
    r->res.group = parts[0];
    r->res.version = parts[1];
    r->res.resource = parts[2];
    r->res.ns = parts[3];
    r->name = parts[4];
    r->allocator = d.allocator;
    r->logger = d.logger;
    r->interval = d.per_ns / d.writes ? d.per_ns / d.writes : 1;
    r->tolerance = (uint64_t)(d.burst - 1) * r->interval;
    r->max_conflicts = d.max_conflicts;
    r->conflict_backoff = d.conflict_backoff_ns;
    r->b_initial = d.backoff_initial_ns;
    r->b_max = d.backoff_max_ns;
    r->backoff = r->b_initial;
    *out = r;
    return KCTL_OK;
}

static void kctl__rep_clear(kctl_reported *r) {
    uint32_t i;
    for (i = 0; i < r->nfields; i++) kctl__free(&r->allocator, r->fields[i].block);
    r->nfields = 0;
    kctl__free(&r->allocator, r->whole);
    r->whole = NULL;
    r->whole_len = 0;
}

KCTL_API void kctl_reported_destroy(kctl_reported *r) {
    if (!r) return;
    kctl__rep_clear(r);
    kctl__free(&r->allocator, r->fields);
    kctl_obj_unref(r->cur);
    kctl__mutex_deinit(&r->mu);
    kctl__free(&r->allocator, r->strings);
    kctl__free(&r->allocator, r);
}

KCTL_API int kctl_reported_set(kctl_reported *r, const char *field, const char *json, size_t len) {
    kctl_json j;
    char *block;
    size_t nl;
    uint32_t i;
    int rc = KCTL_OK;
    if (!r || !field || !*field || !json) return KCTL_ERR_INVALID_ARG;
    if (len == KCTL_NTS) len = kctl__strlen(json);
    if (kctl_json_parse(json, len, NULL, 0, NULL, &j) != KCTL_OK) return KCTL_ERR_INVALID_ARG;
    nl = kctl__strlen(field);
    if (len > SIZE_MAX - nl - 2 || !(block = (char *)kctl__alloc(&r->allocator, nl + len + 2))) return KCTL_ERR_NOMEM;
    kctl__memcpy(block, field, nl + 1);
    kctl__memcpy(block + nl + 1, json, len);
    block[nl + 1 + len] = '\0';
    kctl__mutex_lock(&r->mu);
    for (i = 0; i < r->nfields; i++) /* a few fields: a scan */
        if (r->fields[i].name_len == nl && kctl__memcmp(r->fields[i].block, field, nl) == 0) break;
    if (i == r->nfields && r->nfields == r->cap) {
        uint32_t cap = r->cap ? r->cap * 2 : 8;
        kctl__rep_field *nf = cap > r->cap ? (kctl__rep_field *)kctl__alloc(&r->allocator, (size_t)cap * sizeof *nf) : NULL;
        if (!nf) rc = KCTL_ERR_NOMEM;
        else {
            if (r->nfields) kctl__memcpy(nf, r->fields, r->nfields * sizeof *nf);
            kctl__free(&r->allocator, r->fields);
            r->fields = nf;
            r->cap = cap;
        }
    }
    if (rc == KCTL_OK) {
        if (i == r->nfields) r->nfields++;
        else kctl__free(&r->allocator, r->fields[i].block);
        r->fields[i].block = block;
        r->fields[i].name_len = nl;
        r->fields[i].len = len;
        r->seq++;
        r->stats.sets++;
        block = NULL;
    }
    kctl__mutex_unlock(&r->mu);
    kctl__free(&r->allocator, block);
    return rc;
}

/* A value of C type, through a small writer. */
static int kctl__rep_set_jw(kctl_reported *r, const char *field, kctl_jw *w) {
    const char *text;
    size_t n;
    int rc = kctl_jw_finish(w, &text, &n);
    if (rc == KCTL_OK) rc = kctl_reported_set(r, field, text, n);
    kctl_jw_free(w);
    return rc;
}

KCTL_API int kctl_reported_set_int(kctl_reported *r, const char *field, int64_t v) {
    kctl_jw w;
    if (!r) return KCTL_ERR_INVALID_ARG;
    kctl_jw_init_growable(&w, &r->allocator);
    kctl_jw_int64(&w, v);
    return kctl__rep_set_jw(r, field, &w);
}

KCTL_API int kctl_reported_set_double(kctl_reported *r, const char *field, double v) {
    kctl_jw w;
    if (!r) return KCTL_ERR_INVALID_ARG;
    kctl_jw_init_growable(&w, &r->allocator);
    kctl_jw_double(&w, v);
    return kctl__rep_set_jw(r, field, &w);
}

KCTL_API int kctl_reported_set_bool(kctl_reported *r, const char *field, bool v) {
    return kctl_reported_set(r, field, v ? "true" : "false", KCTL_NTS);
}

KCTL_API int kctl_reported_set_string(kctl_reported *r, const char *field, const char *v) {
    kctl_jw w;
    if (!r || !v) return KCTL_ERR_INVALID_ARG;
    kctl_jw_init_growable(&w, &r->allocator);
    kctl_jw_string(&w, v);
    return kctl__rep_set_jw(r, field, &w);
}

KCTL_API int kctl_reported_set_status(kctl_reported *r, const char *json, size_t len) {
    kctl_json_value root;
    char *copy;
    if (!r || !json) return KCTL_ERR_INVALID_ARG;
    if (len == KCTL_NTS) len = kctl__strlen(json);
    if (kctl_json_get(json, len, "", &root) != KCTL_OK || root.type != KCTL_JSON_OBJECT) return KCTL_ERR_INVALID_ARG;
    if (len == SIZE_MAX || !(copy = (char *)kctl__alloc(&r->allocator, len + 1))) return KCTL_ERR_NOMEM;
    kctl__memcpy(copy, json, len);
    copy[len] = '\0';
    kctl__mutex_lock(&r->mu);
    kctl__rep_clear(r);
    r->whole = copy;
    r->whole_len = len;
    r->seq++;
    r->stats.sets++;
    kctl__mutex_unlock(&r->mu);
    return KCTL_OK;
}

KCTL_API bool kctl_reported_pending(kctl_reported *r) {
    bool p;
    if (!r) return false;
    kctl__mutex_lock(&r->mu);
    p = r->seq != r->done_seq;
    kctl__mutex_unlock(&r->mu);
    return p;
}

KCTL_API void kctl_reported_read_stats(kctl_reported *r, kctl_reported_stats *out) {
    if (!out) return;
    memset(out, 0, sizeof *out);
    if (!r) return;
    kctl__mutex_lock(&r->mu);
    *out = r->stats;
    kctl__mutex_unlock(&r->mu);
}

/* The status to write into w (a growable writer of the caller's): the
   whole status set (or cur's), with the fields set merged in; *seq gets
   the sets it covers. */
static int kctl__rep_desired(kctl_reported *r, kctl_jw *w, uint64_t *seq) {
    kctl_jw patch, whole;
    kctl__jdoc base, pd;
    kctl_json_value v;
    const char *ptext, *btext = NULL;
    size_t plen, blen = 0;
    uint32_t i;
    int rc;
    kctl_jw_init_growable(&patch, &r->allocator);
    kctl_jw_init_growable(&whole, &r->allocator);
    memset(&base, 0, sizeof base);
    memset(&pd, 0, sizeof pd);
    kctl__mutex_lock(&r->mu); /* copies: the lock is not held while merging */
    kctl_jw_object_begin(&patch);
    for (i = 0; i < r->nfields; i++) {
        kctl_jw_key(&patch, r->fields[i].block);
        kctl_jw_raw(&patch, r->fields[i].block + r->fields[i].name_len + 1, r->fields[i].len);
    }
    kctl_jw_object_end(&patch);
    if (r->whole) kctl_jw_raw(&whole, r->whole, r->whole_len);
    *seq = r->seq;
    kctl__mutex_unlock(&r->mu);
    rc = kctl_jw_finish(&patch, &ptext, &plen);
    if (rc == KCTL_OK && whole.len) {
        rc = kctl_jw_finish(&whole, &btext, &blen);
    } else if (rc == KCTL_OK && kctl_obj_get(r->cur, "status", &v) == KCTL_OK && v.type == KCTL_JSON_OBJECT) {
        btext = v.text;
        blen = v.len;
    }
    if (rc == KCTL_OK) rc = kctl__jdoc_parse(&pd, ptext, plen, &r->allocator, NULL);
    if (rc == KCTL_OK && btext) rc = kctl__jdoc_parse(&base, btext, blen, &r->allocator, NULL);
    if (rc == KCTL_OK) rc = kctl_json_merge_patch(btext ? &base.j : NULL, btext ? 0 : KCTL_JSON_NONE, &pd.j, 0, w);
    kctl__jdoc_free(&base);
    kctl__jdoc_free(&pd);
    kctl_jw_free(&patch);
    kctl_jw_free(&whole);
    return rc;
}

/* A failed read or write: back off (a conflict less, up to max_conflicts in a row). */
static void kctl__rep_failed(kctl_reported *r, int rc, uint64_t now) {
    kctl__mutex_lock(&r->mu);
    r->stats.last_error = rc;
    if (rc == KCTL_ERR_CONFLICT) r->stats.conflicts++;
    else r->stats.errors++;
    kctl__mutex_unlock(&r->mu);
    if (rc == KCTL_ERR_CONFLICT || rc == KCTL_ERR_NOT_FOUND) { /* read it again */
        kctl_obj_unref(r->cur);
        r->cur = NULL;
    }
    if (rc == KCTL_ERR_CONFLICT && ++r->conflicts <= r->max_conflicts) {
        uint32_t k = r->conflicts - 1 < 20 ? r->conflicts - 1 : 20;
        r->not_before = kctl__add_sat(now, r->conflict_backoff << k);
        return;
    }
    if (rc == KCTL_ERR_CONFLICT) kctl__log(&r->logger, KCTL_LOG_WARN, KCTL_LOGITEM_REPORTED_CONFLICT_RETRIES);
    r->conflicts = 0;
    r->not_before = kctl__add_sat(now, r->backoff);
    r->backoff = r->backoff > r->b_max / 2 ? r->b_max : r->backoff * 2;
}

KCTL_API int kctl_reported_step(kctl_reported *r, uint64_t now, uint64_t *next_ns) {
    uint64_t seq = 0, allowed;
    kctl_jw w;
    const char *text;
    size_t n;
    bool written = false;
    kctl_obj *out = NULL;
    int rc = KCTL_OK;
    if (next_ns) *next_ns = UINT64_MAX;
    if (!r) return KCTL_ERR_INVALID_ARG;
    if (!kctl_reported_pending(r)) return KCTL_OK;
    allowed = r->tat > r->tolerance ? r->tat - r->tolerance : 0;
    if (now < r->not_before || now < allowed) { /* backing off, or no token yet */
        if (next_ns) *next_ns = r->not_before > allowed ? r->not_before : allowed;
        return KCTL_OK;
    }
    if (!r->cur) rc = kctl_transport_get(&r->t, &r->res, r->name, &r->cur, NULL);
    kctl_jw_init_growable(&w, &r->allocator);
    if (rc == KCTL_OK) rc = kctl__rep_desired(r, &w, &seq);
    if (rc == KCTL_OK) rc = kctl_jw_finish(&w, &text, &n);
    if (rc == KCTL_OK) rc = kctl_status_update(&r->t, &r->res, r->cur, text, n, &written, &out, NULL);
    kctl_jw_free(&w);
    if (rc != KCTL_OK) {
        kctl__rep_failed(r, rc, now);
    } else {
        if (written) { /* a token spent; the object as stored is the next write's base */
            kctl_obj_unref(r->cur);
            r->cur = out;
            r->tat = kctl__add_sat(r->tat > now ? r->tat : now, r->interval);
        }
        r->conflicts = 0;
        r->backoff = r->b_initial;
        kctl__mutex_lock(&r->mu);
        if (written) r->stats.writes++;
        else r->stats.unchanged++;
        r->stats.last_error = KCTL_OK;
        r->done_seq = seq;
        if (r->seq == seq) kctl__rep_clear(r); /* all in the store: nothing to apply again */
        kctl__mutex_unlock(&r->mu);
    }
    if (next_ns && kctl_reported_pending(r)) {
        allowed = r->tat > r->tolerance ? r->tat - r->tolerance : 0;
        *next_ns = r->not_before > allowed ? r->not_before : allowed;
        if (*next_ns < now) *next_ns = now;
    }
    return rc;
}

#endif /* KCTL_IMPLEMENTATION */

/*
------------------------------------------------------------------------------
This software is available under the MIT License.
------------------------------------------------------------------------------
MIT License
Copyright (c) 2026 the kctl authors
Permission is hereby granted, free of charge, to any person obtaining a copy of
this software and associated documentation files (the "Software"), to deal in
the Software without restriction, including without limitation the rights to
use, copy, modify, merge, publish, distribute, sublicense, and/or sell copies
of the Software, and to permit persons to whom the Software is furnished to do
so, subject to the following conditions:
The above copyright notice and this permission notice shall be included in all
copies or substantial portions of the Software.
THE SOFTWARE IS PROVIDED "AS IS", WITHOUT WARRANTY OF ANY KIND, EXPRESS OR
IMPLIED, INCLUDING BUT NOT LIMITED TO THE WARRANTIES OF MERCHANTABILITY,
FITNESS FOR A PARTICULAR PURPOSE AND NONINFRINGEMENT. IN NO EVENT SHALL THE
AUTHORS OR COPYRIGHT HOLDERS BE LIABLE FOR ANY CLAIM, DAMAGES OR OTHER
LIABILITY, WHETHER IN AN ACTION OF CONTRACT, TORT OR OTHERWISE, ARISING FROM,
OUT OF OR IN CONNECTION WITH THE SOFTWARE OR THE USE OR OTHER DEALINGS IN THE
SOFTWARE.
------------------------------------------------------------------------------
*/
