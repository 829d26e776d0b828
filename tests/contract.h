/* contract.h - the transport contract suite: what every kctl_transport owes,
   as tests that run against any store. */
/*
    The porting guide above kctl_resource (kctl.h, TRANSPORT) says what a
    store must do; tests/test_contract.c checks it, through the public API
    alone (the kctl_transport_* wrappers, the kctl_obj getters and
    kctl_api_status), so a remote store runs the same tests as the memstore.
    The tests use only what a remote store can do: real time, watches with
    short timeouts and waits bounded by a deadline (kc_target.wait_ns), and
    never a figure of elapsed time in a check.

    A store joins the suite through a kc_target: a name, how to make a
    fresh empty store and its transport, what it can do (KC_CAP_* below)
    and the hooks for what only a test can make happen (compaction, a
    bookmark, a broken stream). kc_run_contract(&target) then runs every
    contract test as "contract/<name>/<test>" (KT_ONLY=contract/etcd runs
    one target's). A test whose capability the target lacks, or whose hook
    it does not have, is skipped (KT_SKIP).

    Adding a target is a kc_target and one call in kt_suite_contract
    (tests/test_contract.c); one that needs libraries or a server goes in a
    file of its own, built and called under its macro (e.g. KC_ETCD), and
    says whether its server is there (kc_target.available).


    THE TESTS
    =========
    Each on a fresh store; [FLAG] or [hook]: skipped without it.
      create_get            create, get, EXISTS (the stored object kept), NOT_FOUND, a
                            name no object can have (INVALID_ARG)
      update_preconditions  a stale resourceVersion is CONFLICT, the current one
                            writes, none writes [UNCONDITIONAL_UPDATE]
      server_metadata       uid, creationTimestamp set and kept [SERVER_META]
      generation            1, a spec change bumps it, metadata and status do not [GENERATION]
      status_subresource    create drops the status, update ignores it, update_status
                            changes it alone [STATUS]
                            (server_metadata, generation, noop_writes and
                            status_detail write a status only with [STATUS])
      noop_writes           a write that changes nothing: same version, no event
      merge_patch           a merge patch; its resourceVersion a precondition;
                            KCTL_PATCH_STATUS [STATUS]
      delete                resourceVersion and uid preconditions, gone, NOT_FOUND
      finalizers            the mark, a second delete, no new finalizers, the last
                            one's removal removes, DELETED [FINALIZERS]
      list_all              every object at the list's version
      list_paging           pages of limit whose concatenation is the list
      list_paging_snapshot  writes between pages do not show [PAGING_SNAPSHOT]
      list_label_selector, list_field_selector   [LABEL_SELECTOR], [FIELD_SELECTOR]
      watch_from_empty      ADDED for what is there, then changes; its last version
                            resumes exactly
      watch_from_list       exactly the changes after a list's version, then live ones
      watch_event_versions  an event's object at the event's version [EVENT_VERSIONS]
      watch_resume          from the last event's version: nothing lost or repeated
      watch_gone            a compacted version is GONE (410) [compact]
      watch_too_new         TIMEOUT, its Status naming ResourceVersionTooLarge (a
                            cause, or the message: a reflector relists on it)
                            [TOO_NEW, ORDERED_VERSIONS]
      watch_bookmark        a BOOKMARK past filtered events [BOOKMARKS]
      watch_label_selector  leave: DELETED at the event's version; enter: ADDED
                            [LABEL_SELECTOR]
      watch_field_selector  [FIELD_SELECTOR]
      watch_broken          IO, then a watch from the last version [break_watches]
      watch_close_pending   watchers independent; closing with unread events
      status_detail         code and reason of each refusal [STATUS_DETAIL]
      status_wording        messages and details word for word [STATUS_WORDING]
      validation            422 Invalid with causes, 400 BadRequest [VALIDATION]


    DIFFERENCES
    ===========
    The capability flags are the one place where a transport's differences
    from the contract are written down. Per known transport, what it lacks
    and why (every flag not listed, it has):

    memstore     the reference: every capability, every hook. (compact:
                 kctl_memstore_compact; progress: its bookmark clock is a
                 virtual clock the target advances; break_watches:
                 kctl_memstore_break_watches_after.)

    dirstore     the directory of JSON files of examples/dirstore.h (the
                 example of a transport written by a user). Lacks:
                 LABEL_SELECTOR, FIELD_SELECTOR  it keeps no index; a
                                 selector is INVALID_ARG.
                 PAGING_SNAPSHOT pages read the directory as it is then (a
                                 continue token is the last name handed out).
                 FINALIZERS, GENERATION, SERVER_META, VALIDATION
                                 it keeps documents as written: no
                                 deletionTimestamp, generation, uid or
                                 creationTimestamp of its own, and only the
                                 names that would make paths ambiguous are
                                 refused (a uid precondition compares the
                                 metadata.uid the document was written with).
                 STATUS_WORDING  it words NotFound, AlreadyExists, Conflict
                                 and Expired through kctl_apisrv_refuse, but
                                 a delete precondition as an update's
                                 conflict, and its INVALID_ARG comes bare.
                 ORDERED_VERSIONS, EVENT_VERSIONS, EVENT_PER_WRITE
                                 versions are content hashes: an object's is
                                 the hash of its document, a list's and an
                                 event's the state of the whole directory.
                                 A watch polls and diffs states, so changes
                                 between two polls arrive as one event per
                                 object (deletions and changes by name, then
                                 additions by name), and a version the watch
                                 passed in the middle of a poll may be GONE.
                 BOOKMARKS, TOO_NEW  hashes have no order: nothing to
                                 bookmark, and an unknown version is GONE.
                 Also: a write is "no write" only when its document is the
                 same text (member order counts); hooks: compact (forgets
                 the remembered states), no progress, no break_watches.

    etcd         (kctl_http_curl.h; tests/test_etcd.c, one real member, a
                 fresh key prefix per store) every capability: the writes
                 are decided by kctl_apisrv_decide, selectors applied by the
                 transport as the memstore applies them, versions are
                 etcd's revisions. TOO_NEW: etcd itself would wait for a
                 future revision; the transport answers TIMEOUT, as the
                 API server does, from the revision in the watch's first
                 message. Bookmarks are etcd's progress notifications,
                 which come at the server's interval (--experimental-
                 watch-progress-notify-interval, 250 ms there): the
                 progress hook does nothing, bookmark_wait_ns is above it.
                 compact: etcd's compaction at the current revision. No
                 break_watches hook (etcd cannot be told to end one
                 stream): test_etcd.c kills the member a watch is on
                 instead (te_watch_member_killed).

    kube         (kctl_http_curl.h) the Kubernetes API transport, four targets:
    kube-server  against the test API server of tests/kube_server.h, which
                 keeps its objects in a memstore: every capability (the
                 server's rules and versions are the memstore's, its bytes
                 a real API server's). kube (tests/test_kube.c) shares one
                 server, a fresh namespace per store; kube-server
                 (tests/test_kube_contract.c) starts a fresh server per
                 store. compact: the server's expire_history (a watch from
                 before is the in-band 410 ERROR event); progress: its
                 bookmark_now. break_watches: both, as the server's store
                 ending each watch opened afterwards after one event
                 (kctl_memstore_break_watches_after; kube turns it off
                 when a store closes, its server being shared), so the
                 server drops the connection without the chunked
                 terminator; test_kube.c also breaks open watches
                 and ends watches in a test of its own (tk_bookmark_and_ends). A stream the server
                 ends cleanly (its timeoutSeconds) is CLOSED, not IO: no
                 contract test sees one (their watches are short).
    cluster      on demand, a real API server: KCTL_TEST_KUBECONFIG (its
                 context's server, credentials and namespace) and
                 KCTL_TEST_RESOURCE (a namespaced group/version/resource;
                 "v1/configmaps" for the core group) run the suite as
                 contract/cluster/... (tests/test_kube_contract.c).
                 A store is not a namespace there (creating namespaces
                 takes rights a test should not need) but a random name
                 prefix and a label (kctl-contract=<prefix>) in the
                 context's namespace, put on and taken off by a wrapper of
                 the transport; lists and watches select the label, and
                 what a store leaves is deleted at close. The resource's
                 kind and status subresource come from discovery, its
                 generation and unconditional updates from a probe object.
                 Lacks: ORDERED_VERSIONS and TOO_NEW (resourceVersions are
                 opaque by the API's contract, even where they are etcd
                 revisions); no compact hook (the server compacts on its
                 own schedule: GONE is not tested) and no break_watches;
                 BOOKMARKS with a bookmark_wait_ns of 75 s, past the
                 server's bookmark period (about a minute); STATUS when
                 discovery lists no <resource>/status; GENERATION when a
                 new object has none (core resources such as configmaps);
                 UNCONDITIONAL_UPDATE when the server refuses an update
                 without a resourceVersion (custom resources: 422). The
                 tests a lacking capability skips are printed by name.
    kubeconfig   the cluster target's code (kubeconfig, discovery, probe,
                 prefixes and labels, cleanup) in CI: a kubeconfig written
                 for a test server started for it, with that server's hooks
                 and ORDERED_VERSIONS and TOO_NEW (its versions are numbers),
                 so every test runs; the convergence test of
                 tests/test_kube_faults.c runs after it as on a cluster.
*/
#ifndef KC_CONTRACT_H
#define KC_CONTRACT_H
#include "kt.h"

/* What a store can do. A test that needs a flag the target lacks is
   skipped; without a flag, the tests still check what the porting guide
   asks of every store. */
enum {
    KC_CAP_LABEL_SELECTOR   = 1u << 0,  /* label selectors on list and watch; an object leaving the
                                           selection is DELETED (its last matching state), entering ADDED */
    KC_CAP_FIELD_SELECTOR   = 1u << 1,  /* metadata.name and metadata.namespace on list and watch */
    KC_CAP_PAGING_SNAPSHOT  = 1u << 2,  /* every page of a list is from the first page's version */
    KC_CAP_FINALIZERS       = 1u << 3,  /* delete marks (deletionTimestamp), no new finalizers while
                                           deleting (422), removing the last one removes the object */
    KC_CAP_STATUS           = 1u << 4,  /* the status subresource: create drops the status, update
                                           ignores it, update_status changes only it */
    KC_CAP_GENERATION       = 1u << 5,  /* generation 1 on create, bumped by a spec change and by a
                                           deletion mark, never by metadata or status */
    KC_CAP_SERVER_META      = 1u << 6,  /* uid and creationTimestamp set on create and kept after */
    KC_CAP_VALIDATION       = 1u << 7,  /* names and metadata refused as an API server refuses them
                                           (422 Invalid with field causes; 400 for a namespace mismatch) */
    KC_CAP_STATUS_DETAIL    = 1u << 8,  /* a refusal fills kctl_api_status: code and reason, and the
                                           code returned is kctl_api_status_result of them */
    KC_CAP_STATUS_WORDING   = 1u << 9,  /* messages and details word for word as an API server's */
    KC_CAP_ORDERED_VERSIONS = 1u << 10, /* versions are decimal numbers rising with every write */
    KC_CAP_EVENT_VERSIONS   = 1u << 11, /* an event's object carries the event's version (a DELETED:
                                           the deletion's), and a watch resumes from any event's version */
    KC_CAP_EVENT_PER_WRITE  = 1u << 12, /* every write is its own event, in the order written */
    KC_CAP_BOOKMARKS        = 1u << 13, /* a quiet watcher gets a BOOKMARK (after progress, if the
                                           target has that hook, within bookmark_wait_ns) */
    KC_CAP_TOO_NEW          = 1u << 14, /* a watch from a version newer than the store: TIMEOUT */
    KC_CAP_UNCONDITIONAL_UPDATE = 1u << 15, /* an update without a resourceVersion writes (the tests'
                                           other updates carry the version they read) */
    KC_CAP_ALL              = (1u << 16) - 1
};

/* One store under test, made fresh for each test by kc_target.open. */
typedef struct kc_store {
    kctl_transport tp;  /* the transport under test */
    kctl_resource res;  /* where the tests write: the target's res, which open may change
                           (a fresh namespace, say); its ns "" for a cluster-scoped resource */
    void *impl;         /* the target's own */
} kc_store;

typedef struct kc_target kc_target;
struct kc_target {
    const char *name;        /* in the tests' names: "contract/<name>/<test>" */
    unsigned caps;           /* KC_CAP_* */
    kctl_resource res;       /* the resource the tests use (copied into kc_store.res before open) */
    const char *api_version; /* written into every document (NULL: none) */
    const char *kind;        /* likewise */
    /* Whether the store can be reached at all (NULL: always): false skips
       every test of the target (no server running, say). */
    bool (*available)(const kc_target *t);
    /* Make a fresh, empty store: set s->tp (and s->impl, s->res if it must).
       OK, or a code (the test fails). */
    int (*open)(const kc_target *t, kc_store *s);
    /* Free it (every watch is closed by then); may check for leaks with KT_*. */
    void (*close)(const kc_target *t, kc_store *s);
    /* Optional hooks (NULL: the store cannot; the tests that need one skip): */
    int (*compact)(kc_store *s);       /* forget the history up to now: a watch from an older version is GONE */
    int (*progress)(kc_store *s);      /* a quiet watcher gets a BOOKMARK soon */
    int (*break_watches)(kc_store *s); /* watches opened after this end (IO) after one event */
    uint64_t wait_ns;          /* how long to wait for an event that must come (0: 5 s) */
    uint64_t settle_ns;        /* how long to wait before deciding no event is coming (0: look once) */
    uint64_t bookmark_wait_ns; /* how long to wait for a BOOKMARK (0: wait_ns) */
    void *user_data;           /* the target's own */
};

/* Run every contract test against t. [not thread-safe] */
void kc_run_contract(const kc_target *t);

#endif
