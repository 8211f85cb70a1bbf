/* Unit tests of the C side of the sandbox registry (client/c/registry.c):
 * an entry as the Python SDK writes it parses; damaged ones are refused with
 * a reason; a write reads back; a sweep removes damaged and stale entries
 * and keeps a live one (this process stands in for the VMM). */
#include "../../client/c/registry.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "check.h"

static const char python_entry[] =
    "cellvm-sandbox 1\nkey=qemu-0a1b2c3d\nid=unix:/tmp/cellvm-qemu-x/agent.sock\nvmm=qemu\n"
    "pid=4242\npid_start=987\nstarted_ms=1700000000000\ndeadline_ms=1700000300000\n"
    "memory_mb=1024\nvcpus=2\ncreator_pid=17\ncreator_start=5\nkeeper_pid=99\naccel=tcg\n"
    "address=unix:/tmp/cellvm-qemu-x/agent.sock\ndir=/tmp/cellvm-qemu-x\nimage=/img\n"
    "template=base\nmetadata={\"a\": \"b=c\"}\nfuture_field=ignored\n";

static void test_parse_python_entry(void)
{
        struct creg_entry e;
        char why[160];
        CHECK(creg_parse(python_entry, "qemu-0a1b2c3d", &e, why, sizeof(why)) == 0);
        CHECK(strcmp(e.id, "unix:/tmp/cellvm-qemu-x/agent.sock") == 0);
        CHECK(e.pid == 4242 && e.pid_start == 987 && e.memory_mb == 1024 && e.vcpus == 2);
        CHECK(e.started_ms == 1700000000000LL && e.deadline_ms == 1700000300000LL);
        CHECK(strcmp(e.dir, "/tmp/cellvm-qemu-x") == 0 && strcmp(e.template_, "base") == 0);
        CHECK(strcmp(e.accel, "tcg") == 0);
}

static void test_damaged_entries_refused(void)
{
        struct creg_entry e;
        char why[160], buf[2048];
        CHECK(creg_parse("not a registry file\n", "k", &e, why, sizeof(why)) == -EINVAL);
        CHECK(creg_parse(python_entry, "qemu-ffffffff", &e, why, sizeof(why)) == -EINVAL);
        CHECK(strstr(why, "does not match") != NULL);
        snprintf(buf, sizeof(buf), "%s", python_entry);
        memcpy(strstr(buf, "pid=4242"), "pid=42x2", 8);
        CHECK(creg_parse(buf, "qemu-0a1b2c3d", &e, why, sizeof(why)) == -EINVAL);
        snprintf(buf, sizeof(buf), "%s", python_entry);
        *strstr(buf, "deadline_ms") = 'x'; /* the field is missing now */
        CHECK(creg_parse(buf, "qemu-0a1b2c3d", &e, why, sizeof(why)) == -EINVAL);
        snprintf(buf, sizeof(buf), "%s", python_entry);
        memcpy(strstr(buf, "pid=4242"), "pid=0001", 8);
        CHECK(creg_parse(buf, "qemu-0a1b2c3d", &e, why, sizeof(why)) == -EINVAL);
}

static void test_write_sweep(void)
{
        char dir[] = "/tmp/test-creg-XXXXXX";
        CHECK(mkdtemp(dir) != NULL);
        setenv("CELLVM_RUNTIME_DIR", dir, 1);
        struct creg r;
        char err[256];
        CHECK(creg_open(&r, err, sizeof(err)) == 0);
        CHECK(creg_lock(&r) == 0);
        struct creg_entry live = {0};
        CHECK(creg_new_key(&r, "qemu", live.key, sizeof(live.key)) == 0);
        snprintf(live.id, sizeof(live.id), "unix:/x");
        snprintf(live.vmm, sizeof(live.vmm), "qemu");
        live.pid = getpid(); /* stands in for a VMM */
        live.pid_start = creg_proc_start(getpid());
        CHECK(live.pid_start != 0);
        live.started_ms = creg_now_ms();
        live.deadline_ms = live.started_ms + 60000;
        CHECK(creg_write(&r, &live) == 0);
        struct creg_entry stale = live;
        snprintf(stale.key, sizeof(stale.key), "qemu-00000001");
        stale.pid_start += 1; /* the pid belongs to another process now */
        CHECK(creg_write(&r, &stale) == 0);
        char path[700];
        snprintf(path, sizeof(path), "%s/qemu-00000002.sandbox", dir);
        FILE *f = fopen(path, "w");
        CHECK(f != NULL);
        if (f) {
                fputs("garbage\n", f);
                fclose(f);
        }
        struct creg_entry out[4];
        FILE *log = tmpfile();
        CHECK(creg_sweep(&r, out, 4, log) == 1);
        CHECK(strcmp(out[0].key, live.key) == 0 && out[0].deadline_ms == live.deadline_ms);
        char text[1024] = "";
        rewind(log);
        size_t n = fread(text, 1, sizeof(text) - 1, log);
        text[n] = '\0';
        fclose(log);
        CHECK(strstr(text, "damaged registry entry") && strstr(text, "stale registry entry"));
        CHECK(access(path, F_OK) != 0);
        creg_remove(&r, &live, false);
        creg_unlock(&r);
        snprintf(path, sizeof(path), "%s/lock", dir);
        unlink(path);
        CHECK(rmdir(dir) == 0); /* nothing else was left */
}

int main(void)
{
        test_parse_python_entry();
        test_damaged_entries_refused();
        test_write_sweep();
        return check_report("test_client_registry");
}
