/* test_kube_demo.c - examples/edge_agent.c with --kube, run as a child
   process against the test API server (tests/kube_server.h) in this one:
   the agent must converge the device to the cluster's DeviceConfigs in
   its context's namespace, through writes made while it runs, and the
   test checks the result itself (the device's files, each status, what
   stayed untouched), not only the agent's exit code.

   And the custom resource definition and the Role a cluster needs for
   it (examples/deviceconfig-crd.yaml, edge-agent-rbac.yaml) as kubectl
   applies them, checked against what the agent uses.

   The agent is $KT_EDGE_AGENT, else build/edge_agent (the Makefile's
   asan and tsan runs name their own builds); without it the tests skip,
   naming why (a failure under KT_REQUIRE_KUBE). */
#include "kube.h"
#include "kube_server.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static const kctl_resource tkd_dc = { "edge.kctl.io", "v1", "deviceconfigs", "edge" };
static const kctl_resource tkd_dc_default = { "edge.kctl.io", "v1", "deviceconfigs", "default" };

static const char *tkd_agent(void) {
    const char *a = getenv("KT_EDGE_AGENT");
    return a && *a ? a : "build/edge_agent";
}

static void tkd_sleep_ms(long ms) {
    struct timespec ts;
    ts.tv_sec = ms / 1000;
    ts.tv_nsec = (ms % 1000) * 1000000L;
    while (nanosleep(&ts, &ts) != 0 && errno == EINTR) {}
}

static uint64_t tkd_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

/* A temporary directory: dir/kubeconfig (the server, namespace ns),
   dir/agent (the agent's state), dir/agent.log (what it prints). */
typedef struct tkd_env {
    char dir[256], kubeconfig[300], state[300], device[320], log[300];
} tkd_env;

static bool tkd_env_init(tkd_env *e, const char *url, const char *ns) {
    const char *tmp = getenv("TMPDIR");
    FILE *f;
    memset(e, 0, sizeof *e);
    snprintf(e->dir, sizeof e->dir, "%s/kt-kube-demo-XXXXXX", tmp && *tmp ? tmp : "/tmp");
    if (!mkdtemp(e->dir)) return false;
    snprintf(e->kubeconfig, sizeof e->kubeconfig, "%s/kubeconfig", e->dir);
    snprintf(e->state, sizeof e->state, "%s/agent", e->dir);
    snprintf(e->device, sizeof e->device, "%s/device", e->state);
    snprintf(e->log, sizeof e->log, "%s/agent.log", e->dir);
    if (mkdir(e->state, 0700) != 0 || mkdir(e->device, 0700) != 0 || !(f = fopen(e->kubeconfig, "w"))) return false;
    /* as `kubectl config set-cluster/set-credentials/set-context` write it */
    fprintf(f, "apiVersion: v1\nclusters:\n- cluster:\n    server: %s\n  name: test\ncontexts:\n- context:\n    cluster: test\n"
               "    namespace: %s\n    user: test\n  name: test\ncurrent-context: test\nkind: Config\npreferences: {}\n"
               "users:\n- name: test\n  user: {}\n", url, ns);
    return fclose(f) == 0;
}

/* Remove what tkd_env_init made and what the agent wrote (two levels). */
static void tkd_rm_dir(const char *dir) {
    DIR *d = opendir(dir);
    struct dirent *de;
    if (d) {
        while ((de = readdir(d)) != NULL) {
            char p[600];
            if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0) continue;
            snprintf(p, sizeof p, "%s/%s", dir, de->d_name);
            if (remove(p) != 0) tkd_rm_dir(p);
        }
        closedir(d);
    }
    rmdir(dir);
}

static void tkd_env_free(tkd_env *e) {
    if (e->dir[0]) tkd_rm_dir(e->dir);
}

/* Start path with argv (argv[0] replaced by path), its output into
   e->log, without the in-cluster variables. The pid, or -1. */
static pid_t tkd_spawn_path(tkd_env *e, const char *path, char **argv) {
    pid_t pid;
    fflush(stdout);
    pid = fork();
    if (pid == 0) {
        int fd = open(e->log, O_WRONLY | O_CREAT | O_TRUNC, 0600), dn = open("/dev/null", O_RDONLY);
        if (fd < 0) _exit(126);
        dup2(fd, 1);
        dup2(fd, 2);
        if (dn >= 0) dup2(dn, 0);
        unsetenv("KUBERNETES_SERVICE_HOST");
        unsetenv("KUBERNETES_SERVICE_PORT");
        unsetenv("KUBECONFIG");
        unsetenv("EDGE_AGENT_SECONDS");
        unsetenv("EDGE_AGENT_STATE");
        argv[0] = (char *)path;
        execv(argv[0], argv);
        _exit(127);
    }
    return pid;
}

/* The agent, so. */
static pid_t tkd_spawn(tkd_env *e, char **argv) { return tkd_spawn_path(e, tkd_agent(), argv); }

/* Wait for pid (killing it after ms): its exit code, or -1 (killed, or a signal). */
static int tkd_wait(pid_t pid, uint64_t ms) {
    uint64_t t0 = tkd_ms();
    int status = 0;
    for (;;) {
        pid_t r = waitpid(pid, &status, WNOHANG);
        if (r == pid) return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
        if (r < 0) return -1;
        if (tkd_ms() - t0 > ms) {
            kill(pid, SIGKILL); /* by pid: our child */
            waitpid(pid, &status, 0);
            return -1;
        }
        tkd_sleep_ms(10);
    }
}

static void tkd_show_log(const tkd_env *e) {
    char buf[8192];
    size_t n;
    FILE *f = fopen(e->log, "r");
    if (!f) return;
    n = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[n] = '\0';
    printf("---- what the child printed:\n%s----\n", buf);
}

/* Whether the agent is there and has --kube: false after a skip (said why). */
static bool tkd_need_agent(void) {
    struct stat st;
    const char *a = tkd_agent();
    if (stat(a, &st) != 0 || access(a, X_OK) != 0)
        return kt_kube_need(__FILE__, __LINE__, "no edge agent to run (make build/edge_agent, or set KT_EDGE_AGENT)") != 0;
    return true;
}

static int tkd_put(kctl_memstore *ms, const kctl_resource *res, const char *json) {
    return kctl_memstore_apply(ms, res, json, strlen(json), NULL, NULL);
}

/* name's generation and status.observedGeneration (-1: none); false when it is not there. */
static bool tkd_generations(kctl_transport *t, const char *name, int64_t *gen, int64_t *observed) {
    kctl_obj *o = NULL;
    *gen = *observed = -1;
    if (kctl_transport_get(t, &tkd_dc, name, &o, NULL) != KCTL_OK) return false;
    *gen = kctl_obj_generation(o);
    if (kctl_obj_get_int64(o, "status.observedGeneration", observed) != KCTL_OK) *observed = -1;
    kctl_obj_unref(o);
    return true;
}

static bool tkd_file(const tkd_env *e, const char *name, char *buf, size_t cap) {
    char path[600];
    size_t n;
    FILE *f;
    snprintf(path, sizeof path, "%s/%s", e->device, name);
    if (!(f = fopen(path, "r"))) return false;
    n = fread(buf, 1, cap - 1, f);
    fclose(f);
    buf[n] = '\0';
    return true;
}

static const char tkd_gateway[] = "{\"apiVersion\":\"edge.kctl.io/v1\",\"kind\":\"DeviceConfig\",\"metadata\":{\"name\":\"gateway\"},\"spec\":"
                                  "{\"hostname\":\"gw-plant7-01\",\"ntpServers\":[\"10.0.0.1\",\"pool.ntp.org\"],\"features\":{\"ssh\":true}}}";

/* The agent, 4 s on the cluster: three DeviceConfigs before it starts and
   a stale device file; while it runs, one edited, one created, one
   deleted; an object in another namespace. Then: every object's file as
   rendered from its spec at its generation, every status at it, phase
   Applied; no file for the deleted one, the stale one or the other
   namespace's; that one without status. */
static void tkd_agent_converges(void) {
    kt_kube_server *s = NULL;
    kctl_memstore *ms;
    kctl_transport t;
    kt_kube_server_counters c;
    tkd_env e;
    char *argv[] = { NULL, (char *)"4", NULL, (char *)"--kube", NULL, NULL };
    char buf[4096];
    int64_t gen, observed;
    uint64_t t0;
    pid_t pid;
    int rc, files = 0;
    DIR *d;
    struct dirent *de;
    kctl_obj *o = NULL;
    static const struct { const char *name, *hostname; int64_t gen; } want[] = {
        { "gateway", "gw-plant7-02", 2 }, { "sensor-2", "sensor-plant7-02", 1 }, { "camera-1", "cam-plant7-01", 1 },
    };
    size_t i;
    KT_KUBE_REQUIRE_CURL();
    if (!tkd_need_agent()) return;
    KT_EQ_INT(kt_kube_server_start(NULL, &s), KCTL_OK);
    if (!s) return;
    ms = kt_kube_server_memstore(s);
    t = kt_kube_server_transport(s);
    if (!tkd_env_init(&e, kt_kube_server_url(s), "edge")) {
        KT_CHECK(!"a temporary directory");
        tkd_env_free(&e);
        kt_kube_server_stop(s);
        return;
    }
    KT_EQ_INT(tkd_put(ms, &tkd_dc, tkd_gateway), KCTL_OK);
    KT_EQ_INT(tkd_put(ms, &tkd_dc, "{\"metadata\":{\"name\":\"sensor-1\"},\"spec\":{\"hostname\":\"sensor-plant7-01\",\"ntpServers\":[\"10.0.0.1\"]}}"),
              KCTL_OK);
    KT_EQ_INT(tkd_put(ms, &tkd_dc, "{\"metadata\":{\"name\":\"sensor-2\"},\"spec\":{\"hostname\":\"sensor-plant7-02\",\"features\":{\"ota\":true}}}"),
              KCTL_OK);
    KT_EQ_INT(tkd_put(ms, &tkd_dc_default, "{\"metadata\":{\"name\":\"elsewhere\"},\"spec\":{\"hostname\":\"not-this-agent\"}}"), KCTL_OK);
    {
        char ghost[400];
        FILE *f;
        snprintf(ghost, sizeof ghost, "%s/ghost.conf", e.device); /* its object was deleted while the agent was down */
        if ((f = fopen(ghost, "w")) != NULL) {
            fputs("hostname = ghost\n", f);
            fclose(f);
        }
    }

    argv[2] = e.state;
    argv[4] = e.kubeconfig;
    pid = tkd_spawn(&e, argv);
    KT_CHECK(pid > 0);
    if (pid <= 0) goto out;
    for (t0 = tkd_ms(); tkd_ms() - t0 < 20000; tkd_sleep_ms(10)) /* the agent has synced and reconciled */
        if (tkd_generations(&t, "gateway", &gen, &observed) && observed == 1) break;
    KT_EQ_INT(observed, 1);
    KT_EQ_INT(tkd_put(ms, &tkd_dc, "{\"apiVersion\":\"edge.kctl.io/v1\",\"kind\":\"DeviceConfig\",\"metadata\":{\"name\":\"gateway\"},\"spec\":"
                                   "{\"hostname\":\"gw-plant7-02\",\"ntpServers\":[\"10.0.0.1\"],\"features\":{\"ssh\":true}}}"),
              KCTL_OK);
    KT_EQ_INT(tkd_put(ms, &tkd_dc, "{\"metadata\":{\"name\":\"camera-1\"},\"spec\":{\"hostname\":\"cam-plant7-01\",\"ntpServers\":[\"10.0.0.2\"]}}"),
              KCTL_OK);
    KT_EQ_INT(kctl_transport_remove(&t, &tkd_dc, "sensor-1", NULL, NULL, NULL), KCTL_OK);
    rc = tkd_wait(pid, 60000);
    KT_EQ_INT(rc, 0); /* the agent's own check: converged */

    for (i = 0; i < sizeof want / sizeof want[0]; i++) {
        char name[64], head[256];
        snprintf(name, sizeof name, "%s.conf", want[i].name);
        snprintf(head, sizeof head, "# written by edge_agent from DeviceConfig %s, generation %lld\nhostname = %s\n", want[i].name,
                 (long long)want[i].gen, want[i].hostname);
        KT_CHECK(tkd_generations(&t, want[i].name, &gen, &observed));
        KT_EQ_INT(gen, want[i].gen);
        KT_EQ_INT(observed, want[i].gen);
        KT_CHECK(tkd_file(&e, name, buf, sizeof buf) && strncmp(buf, head, strlen(head)) == 0);
        if (kctl_transport_get(&t, &tkd_dc, want[i].name, &o, NULL) == KCTL_OK) {
            char phase[32];
            KT_EQ_INT(kctl_obj_get_string(o, "status.phase", phase, sizeof phase, NULL), KCTL_OK);
            KT_EQ_STR(phase, "Applied");
            kctl_obj_unref(o);
        }
    }
    KT_CHECK(tkd_file(&e, "gateway.conf", buf, sizeof buf) && strstr(buf, "\nntp = 10.0.0.1\nfeature.ssh = on\n") != NULL);
    KT_CHECK(tkd_file(&e, "camera-1.conf", buf, sizeof buf) && strstr(buf, "\nntp = 10.0.0.2\n") != NULL);
    if ((d = opendir(e.device)) != NULL) { /* nothing else: not sensor-1, ghost or elsewhere */
        while ((de = readdir(d)) != NULL) files += de->d_name[0] != '.';
        closedir(d);
    }
    KT_EQ_INT(files, 3);
    KT_CHECK(!tkd_file(&e, "sensor-1.conf", buf, sizeof buf));
    KT_CHECK(!tkd_file(&e, "ghost.conf", buf, sizeof buf));
    if (kctl_transport_get(&t, &tkd_dc_default, "elsewhere", &o, NULL) == KCTL_OK) { /* another namespace: untouched */
        KT_CHECK(kctl_obj_get_int64(o, "status.observedGeneration", &gen) != KCTL_OK);
        kctl_obj_unref(o);
    } else {
        KT_CHECK(!"the other namespace's object");
    }
    kt_kube_server_counters_get(s, &c);
    KT_CHECK(c.watches_opened >= 1); /* over HTTP: a list, then a watch */
    KT_CHECK(c.requests[KCTL_VERB_LIST] >= 1);
out:
    if (kt.cur_failed || getenv("KT_VERBOSE")) tkd_show_log(&e);
    tkd_env_free(&e);
    kt_kube_server_stop(s);
}

/* What the agent refuses, with its exit code: a kubeconfig that is not
   there (1), in-cluster outside a pod (1), --kube with --in-cluster and
   --context without --kube (2, usage); nothing written to the device. */
static void tkd_agent_refuses(void) {
    tkd_env e;
    char missing[400];
    char *a1[] = { NULL, (char *)"1", NULL, (char *)"--kube", NULL, NULL };
    char *a2[] = { NULL, (char *)"1", NULL, (char *)"--in-cluster", NULL };
    char *a3[] = { NULL, (char *)"1", NULL, (char *)"--kube", (char *)"--in-cluster", NULL };
    char *a4[] = { NULL, (char *)"1", NULL, (char *)"--context", (char *)"test", NULL };
    char **cases[] = { a1, a2, a3, a4 };
    int want[] = { 1, 1, 2, 2 }, files = 0;
    size_t i;
    DIR *d;
    struct dirent *de;
    KT_KUBE_REQUIRE_CURL();
    if (!tkd_need_agent()) return;
    if (!tkd_env_init(&e, "http://127.0.0.1:1", "edge")) {
        KT_CHECK(!"a temporary directory");
        tkd_env_free(&e);
        return;
    }
    snprintf(missing, sizeof missing, "%s/no-such-kubeconfig", e.dir);
    a1[4] = missing;
    for (i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        pid_t pid;
        int rc;
        cases[i][2] = e.state;
        pid = tkd_spawn(&e, cases[i]);
        rc = pid > 0 ? tkd_wait(pid, 30000) : -1;
        if (rc != want[i]) {
            kt_fail(__FILE__, __LINE__, "case %d: exit %d, want %d", (int)i, rc, want[i]);
            tkd_show_log(&e);
        }
    }
    if ((d = opendir(e.device)) != NULL) {
        while ((de = readdir(d)) != NULL) files += de->d_name[0] != '.';
        closedir(d);
    }
    KT_EQ_INT(files, 0);
    tkd_env_free(&e);
}

/* kubectl on PATH (KT_KUBECTL names another), into buf; false if none. */
static bool tkd_kubectl(char *buf, size_t cap) {
    const char *env = getenv("KT_KUBECTL"), *path = getenv("PATH"), *p;
    if (env && *env) return snprintf(buf, cap, "%s", env) < (int)cap && access(buf, X_OK) == 0;
    for (p = path; p && *p;) {
        const char *colon = strchr(p, ':');
        size_t n = colon ? (size_t)(colon - p) : strlen(p);
        if (n && (size_t)snprintf(buf, cap, "%.*s/kubectl", (int)n, p) < cap && access(buf, X_OK) == 0) return true;
        p += n + (colon ? 1 : 0);
    }
    return false;
}

/* The field at path of the object name in res, as text (false: none). */
static bool tkd_field(kt_kube_server *s, const kctl_resource *res, const char *name, const char *path, char *buf, size_t cap) {
    kctl_transport t = kt_kube_server_transport(s);
    kctl_obj *o = NULL;
    int rc;
    buf[0] = '\0';
    if (kctl_transport_get(&t, res, name, &o, NULL) != KCTL_OK) return false;
    rc = kctl_obj_get_string(o, path, buf, cap, NULL);
    kctl_obj_unref(o);
    return rc == KCTL_OK;
}

/* examples/deviceconfig-crd.yaml and edge-agent-rbac.yaml, as kubectl
   reads and sends them (kubectl apply to a test server that serves the
   kinds: it keeps what it gets): the CRD defines the resource the agent
   reconciles (edge.kctl.io/v1 deviceconfigs, kind DeviceConfig,
   namespaced, a status subresource, spec.hostname required), and the
   Role grants what the README says. */
static void tkd_crd_and_rbac(void) {
    static const kt_kube_resource served[] = {
        { "edge.kctl.io", "v1", "deviceconfigs", "deviceconfig", "DeviceConfig", "dc", true, true },
        { "apiextensions.k8s.io", "v1", "customresourcedefinitions", "customresourcedefinition", "CustomResourceDefinition", "crd", false, true },
        { "", "v1", "serviceaccounts", "serviceaccount", "ServiceAccount", "sa", true, false },
        { "rbac.authorization.k8s.io", "v1", "roles", "role", "Role", NULL, true, false },
        { "rbac.authorization.k8s.io", "v1", "rolebindings", "rolebinding", "RoleBinding", NULL, true, false },
    };
    static const kctl_resource crd = { "apiextensions.k8s.io", "v1", "customresourcedefinitions", "" };
    static const kctl_resource role = { "rbac.authorization.k8s.io", "v1", "roles", "default" };
    static const struct { const kctl_resource *res; const char *name, *path, *want; } fields[] = {
        { &crd, "deviceconfigs.edge.kctl.io", "spec.group", "edge.kctl.io" },
        { &crd, "deviceconfigs.edge.kctl.io", "spec.scope", "Namespaced" },
        { &crd, "deviceconfigs.edge.kctl.io", "spec.names.plural", "deviceconfigs" },
        { &crd, "deviceconfigs.edge.kctl.io", "spec.names.kind", "DeviceConfig" },
        { &crd, "deviceconfigs.edge.kctl.io", "spec.versions[0].name", "v1" },
        { &crd, "deviceconfigs.edge.kctl.io", "spec.versions[0].schema.openAPIV3Schema.properties.spec.required[0]", "hostname" },
        { &crd, "deviceconfigs.edge.kctl.io", "spec.versions[0].schema.openAPIV3Schema.properties.status.properties.observedGeneration.type",
          "integer" },
        { &role, "edge-agent", "rules[0].resources[0]", "deviceconfigs" },
        { &role, "edge-agent", "rules[0].verbs[2]", "watch" },
        { &role, "edge-agent", "rules[1].resources[0]", "deviceconfigs/status" },
        { &role, "edge-agent", "rules[1].verbs[1]", "update" },
        { &role, "edge-agent", "rules[2].apiGroups[0]", "coordination.k8s.io" },
        { &role, "edge-agent", "rules[2].resources[0]", "leases" },
    };
    kt_kube_server_desc d;
    kt_kube_server *s = NULL;
    tkd_env e;
    char kubectl[512], cache[320], buf[256];
    char *argv[] = { NULL, (char *)"--kubeconfig", NULL, (char *)"--cache-dir", NULL, (char *)"apply",
                     (char *)"-f", (char *)"examples/deviceconfig-crd.yaml", (char *)"-f", (char *)"examples/edge-agent-rbac.yaml", NULL };
    kctl_transport t;
    kctl_obj *o = NULL;
    size_t i;
    pid_t pid;
    if (!tkd_kubectl(kubectl, sizeof kubectl)) {
        kt_kube_need(__FILE__, __LINE__, "no kubectl on PATH (or KT_KUBECTL)");
        return;
    }
    memset(&d, 0, sizeof d);
    d.resources = served;
    d.resource_count = sizeof served / sizeof served[0];
    KT_EQ_INT(kt_kube_server_start(&d, &s), KCTL_OK);
    if (!s) return;
    if (!tkd_env_init(&e, kt_kube_server_url(s), "default")) {
        KT_CHECK(!"a temporary directory");
        tkd_env_free(&e);
        kt_kube_server_stop(s);
        return;
    }
    snprintf(cache, sizeof cache, "%s/cache", e.dir);
    argv[2] = e.kubeconfig;
    argv[4] = cache;
    pid = tkd_spawn_path(&e, kubectl, argv);
    KT_EQ_INT(pid > 0 ? tkd_wait(pid, 60000) : -1, 0);
    for (i = 0; i < sizeof fields / sizeof fields[0]; i++) {
        if (!tkd_field(s, fields[i].res, fields[i].name, fields[i].path, buf, sizeof buf) || strcmp(buf, fields[i].want) != 0)
            kt_fail(__FILE__, __LINE__, "%s %s: \"%s\", want \"%s\"", fields[i].name, fields[i].path, buf, fields[i].want);
    }
    t = kt_kube_server_transport(s);
    if (kctl_transport_get(&t, &crd, "deviceconfigs.edge.kctl.io", &o, NULL) == KCTL_OK) {
        bool served_v = false, storage = false;
        kctl_json_value v;
        KT_EQ_INT(kctl_obj_get_bool(o, "spec.versions[0].served", &served_v), KCTL_OK);
        KT_EQ_INT(kctl_obj_get_bool(o, "spec.versions[0].storage", &storage), KCTL_OK);
        KT_CHECK(served_v && storage);
        KT_EQ_INT(kctl_obj_get(o, "spec.versions[0].subresources.status", &v), KCTL_OK); /* the agent writes status there */
        kctl_obj_unref(o);
    } else {
        KT_CHECK(!"the CRD, as kubectl applied it");
    }
    if (kt.cur_failed) tkd_show_log(&e);
    tkd_env_free(&e);
    kt_kube_server_stop(s);
}

void kt_suite_kube_demo(void) {
    KT_RUN(tkd_agent_converges);
    KT_RUN(tkd_agent_refuses);
    KT_RUN(tkd_crd_and_rbac);
}
