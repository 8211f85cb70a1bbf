/*
 * Unit tests of the CLI's snapshot manifests and template names
 * (client/c/manifest.c, client/c/template.c) against the tests' own reader
 * of the format (tests/snapshot_format.py), run on the same inputs: what one
 * accepts the other accepts and writes back the same, what one refuses the
 * other refuses; a manifest written by C is read back by Python; the names
 * hash alike. Plus the bounds (truncated, oversized, foreign input) and the
 * checks of a snapshot's files.
 */
#include "../../client/c/manifest.h"
#include "../../client/c/template.h"
#include "../../client/c/tsc_word.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "check.h"
#include "python_ref.h"

/* A template's manifest as snapshot.Manifest.to_text writes it. */
static const char good[] =
    "cellvm-snapshot 1\n"
    "kind=template\n"
    "vmm=qemu\n"
    "vmm_version=QEMU emulator version 7.2.22 (Debian 1:7.2+dfsg-7+deb12u18+b3)\n"
    "vmm_binary=qemu-system-x86_64\n"
    "accel=tcg\n"
    "memory_mb=1024\n"
    "vcpus=1\n"
    "image=/work/cellvm/build/image\n"
    "cmdline=console=ttyS0 root=/dev/vda rootfstype=ext4 ro reboot=t pci=off "
    "tsc_early_khz=2100000 cellvm.mem_limit=896M cellvm.deadline_ms=900000\n"
    "file=kernel 14190528 1796160044123456789 /work/cellvm/build/image/vmlinuz\n"
    "file=initramfs 442513 1796160044123456789 /work/cellvm/build/image/initramfs.cpio.gz\n"
    "file=rootfs 464519168 1796160049123456789 /work/cellvm/build/image/rootfs, with comma.ext4\n"
    "state=state\n"
    "state_size=67704\n"
    "memory=memory\n"
    "memory_size=1073741824\n"
    "instance_dir=\n"
    "generation=18446744073709551615\n"
    "created_ms=1796160500000\n"
    "build_ms=25800\n"
    "started_ms=0\n"
    "sandbox_id=\n"
    "registry_key=\n"
    "template=\n"
    "timeout_s=\n"
    "metadata={}\n"
    "envs={}\n"
    "arg=qemu-system-x86_64\n"
    "arg=-M\n"
    "arg=microvm,x-option-roms=off,acpi=on\n"
    "arg=-chardev\n"
    "arg=socket,id=agent,path=@DIR@/agent.sock,server=on,wait=off\n"
    "arg=-object\n"
    "arg=memory-backend-file,id=ram0,size=1024M,mem-path=@SNAPSHOT@/memory,share=off\n"
    "arg=\n";

/* Python's verdict on `text` as a manifest file: "OK\n" + to_text(), or "ERR\n" + why. */
static const char py_read[] =
    "import os, shutil, sys, tempfile\n"
    "import snapshot_format as snapshot\n"
    "d = tempfile.mkdtemp()\n"
    "try:\n"
    "    with open(os.path.join(d, 'manifest'), 'wb') as f:\n"
    "        f.write(sys.stdin.buffer.read())\n"
    "    try:\n"
    "        sys.stdout.write('OK\\n' + snapshot.read_manifest(d).to_text())\n"
    "    except snapshot.SnapshotError as e:\n"
    "        sys.stdout.write('ERR\\n' + str(e))\n"
    "finally:\n"
    "    shutil.rmtree(d)\n";

static char pybuf[1 << 20], cbuf[1 << 20];

/* C's verdict in the same form (why: C's message). */
static void c_read(const char *text, size_t len, char *out, size_t outlen)
{
        struct csm m;
        char why[512];
        CHECK(csm_init(&m) == 0);
        if (csm_parse(text, len, &m, why, sizeof(why)) == 0) {
                char *t;
                size_t tl;
                CHECK(csm_format(&m, &t, &tl) == 0);
                snprintf(out, outlen, "OK\n%s", t);
                free(t);
        } else {
                snprintf(out, outlen, "ERR\n%s", why);
        }
        csm_free(&m);
}

/* Both readers agree on `text`: the same canonical text, or both refuse it. */
static void same_verdict(const char *what, const char *text, size_t len)
{
        c_read(text, len, cbuf, sizeof(cbuf));
        if (python_ref(py_read, text, len, pybuf, sizeof(pybuf)) < 0) {
                CHECK(!"python ran");
                return;
        }
        bool c_ok = strncmp(cbuf, "OK\n", 3) == 0, py_ok = strncmp(pybuf, "OK\n", 3) == 0;
        CHECK(c_ok == py_ok);
        if (c_ok && py_ok)
                CHECK(strcmp(cbuf, pybuf) == 0);
        if (c_ok != py_ok || (c_ok && strcmp(cbuf, pybuf) != 0))
                fprintf(stderr, "%s: C says\n%.600s\n--- Python says\n%.600s\n", what, cbuf, pybuf);
}

static void test_parity_with_python(void)
{
        same_verdict("good", good, strlen(good));
        /* Unknown names (a newer writer's) ignored, a repeated one's last value
         * kept, lists in order, empty lines skipped, '=' inside a value. */
        static const char shuffled[] = "cellvm-snapshot 1\n"
                                       "arg=b\n"
                                       "state=st\n"
                                       "future_field=whatever=1\n"
                                       "_private=1\n"
                                       "\n"
                                       "vmm=firecracker\n"
                                       "kind=paused\n"
                                       "kind=template\n"
                                       "arg=a\n"
                                       "cmdline=a=b c=d\n"
                                       "request=PUT /snapshot/load {\"x\": 1}\n"
                                       "memory_mb=768\n";
        same_verdict("shuffled", shuffled, strlen(shuffled));
        static const char *const refused[] = {
            "",                                                          /* empty */
            "cellvm-snapshot 2\nkind=template\nvmm=qemu\nstate=state\n", /* another format */
            "CELLVM-SNAPSHOT 1\nkind=template\nvmm=qemu\nstate=state\n",
            "{\"kind\": \"template\"}\n",                   /* foreign: JSON */
            "cellvm-snapshot 1\nkind=template\nvmm=qemu\n", /* no state */
            "cellvm-snapshot 1\nstate=state\n",             /* no kind, vmm */
            "cellvm-snapshot 1\nkind=template\nvmm=qemu\nstate=state\nno equals sign\n",
            "cellvm-snapshot 1\nkind=template\nvmm=qemu\nstate=state\nmemory_mb=12a\n",
            "cellvm-snapshot 1\nkind=template\nvmm=qemu\nstate=state\nvcpus=\n",
            NULL,
        };
        for (const char *const *r = refused; *r; r++) {
                same_verdict("refused", *r, strlen(*r));
                c_read(*r, strlen(*r), cbuf, sizeof(cbuf));
                CHECK(strncmp(cbuf, "ERR\n", 4) == 0);
        }
        /* Not UTF-8, and a NUL-free binary blob. */
        static const char latin1[] =
            "cellvm-snapshot 1\nkind=template\nvmm=qemu\nstate=\xe9t\xe9\n";
        same_verdict("latin-1", latin1, strlen(latin1));
        static const char binary[] = "\x7f"
                                     "ELF\x02\x01\x01\xff\xfe\n\x01";
        same_verdict("binary", binary, sizeof(binary) - 1);
        /* UTF-8 values are kept as they are. */
        static const char utf8[] =
            "cellvm-snapshot 1\nkind=template\nvmm=qemu\nstate=state\nimage=/tmp/\xc3\xa9t\xc3\xa9 "
            "\xf0\x9f\x98\x80\n";
        same_verdict("utf-8", utf8, strlen(utf8));
}

static void test_size_bound(void)
{
        /* Exactly CSM_MAX_BYTES: read; one byte more: refused, by both. */
        size_t head = strlen(good);
        char *big = malloc(CSM_MAX_BYTES + 2);
        CHECK(big != NULL);
        if (!big)
                return;
        memcpy(big, good, head);
        memcpy(big + head, "padding=", 8);
        memset(big + head + 8, 'x', CSM_MAX_BYTES - head - 9);
        big[CSM_MAX_BYTES - 1] = '\n';
        same_verdict("256 KiB", big, CSM_MAX_BYTES);
        c_read(big, CSM_MAX_BYTES, cbuf, sizeof(cbuf));
        CHECK(strncmp(cbuf, "OK\n", 3) == 0);
        big[CSM_MAX_BYTES - 1] = 'x';
        big[CSM_MAX_BYTES] = '\n';
        same_verdict("256 KiB + 1", big, CSM_MAX_BYTES + 1);
        c_read(big, CSM_MAX_BYTES + 1, cbuf, sizeof(cbuf));
        CHECK(strstr(cbuf, "ERR\nlarger than 262144 bytes") == cbuf);
        free(big);
}

/* Where the C reader is stricter than Python's (docs/SNAPSHOTS.md says so):
 * what no writer produces is refused rather than guessed at. */
static void test_stricter_than_python(void)
{
        char why[512];
        struct csm m;
        static const struct {
                const char *text, *why;
        } cases[] = {
            {"cellvm-snapshot 1\nkind=template\nvmm=qemu\nstate=sta", "truncated"},
            {"cellvm-snapshot 1\nkind=template\nvmm=qemu\nstate=state\nmemory_mb=+5\n",
             "memory_mb is not a number: '+5'"},
            {"cellvm-snapshot 1\nkind=template\nvmm=qemu\nstate=state\nmemory_mb= 5\n",
             "memory_mb is not a number"},
            {"cellvm-snapshot 1\nkind=template\nvmm=qemu\nstate=state\nmemory_mb=1_000\n",
             "memory_mb is not a number"},
            {"cellvm-snapshot 1\nkind=template\nvmm=qemu\nstate=state\n"
             "state_size=18446744073709551616\n",
             "state_size is not a number"},
            {"cellvm-snapshot 1\nkind=template\nvmm=qemu\r\nstate=state\n",
             "vmm holds a carriage return"},
        };
        for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
                CHECK(csm_init(&m) == 0);
                int rc = csm_parse(cases[i].text, strlen(cases[i].text), &m, why, sizeof(why));
                CHECK(rc == -EINVAL && strstr(why, cases[i].why) != NULL);
                if (rc != -EINVAL || !strstr(why, cases[i].why))
                        fprintf(stderr, "case %zu: rc %d, why %s\n", i, rc, why);
                csm_free(&m);
        }
        static const char nul[] = "cellvm-snapshot 1\nkind=template\nvmm=qemu\nstate=a\0b\n";
        CHECK(csm_init(&m) == 0);
        CHECK(csm_parse(nul, sizeof(nul) - 1, &m, why, sizeof(why)) == -EINVAL);
        CHECK(strcmp(why, "holds a NUL byte: not a cellvm manifest") == 0);
        csm_free(&m);
        /* A list is bounded. */
        size_t cap = 64 + (size_t)(CSM_MAX_LIST + 1) * 6;
        char *many = malloc(cap);
        size_t k = (size_t)snprintf(many, cap, "cellvm-snapshot 1\nkind=t\nvmm=q\nstate=s\n");
        for (int i = 0; i <= CSM_MAX_LIST; i++)
                k += (size_t)snprintf(many + k, cap - k, "arg=x\n");
        CHECK(csm_init(&m) == 0);
        CHECK(csm_parse(many, k, &m, why, sizeof(why)) == -EINVAL);
        CHECK(strstr(why, "more than 512 arg lines") != NULL);
        csm_free(&m);
        free(many);
}

static void test_fields_and_messages(void)
{
        struct csm m;
        char why[512];
        CHECK(csm_init(&m) == 0);
        CHECK(csm_parse(good, strlen(good), &m, why, sizeof(why)) == 0);
        CHECK(strcmp(m.kind, "template") == 0 && strcmp(m.vmm, "qemu") == 0);
        CHECK(m.memory_mb == 1024 && m.vcpus == 1 && m.state_size == 67704);
        CHECK(m.memory_size == 1073741824ull && m.generation == UINT64_MAX);
        CHECK(m.file.n == 3 && strncmp(m.file.v[2], "rootfs 464519168 ", 17) == 0);
        CHECK(m.arg.n == 8 && strcmp(m.arg.v[7], "") == 0);
        CHECK(strcmp(m.metadata, "{}") == 0);
        csm_free(&m);

        CHECK(csm_init(&m) == 0);
        const char *bad = "cellvm-snapshot 1\nkind=template\nvmm=qemu\nstate=state\nno equals\n";
        CHECK(csm_parse(bad, strlen(bad), &m, why, sizeof(why)) == -EINVAL);
        CHECK(strcmp(why, "line without '=': 'no equals'") == 0);
        csm_free(&m);
        CHECK(csm_init(&m) == 0);
        bad = "cellvm-snapshot 1\nkind=template\n";
        CHECK(csm_parse(bad, strlen(bad), &m, why, sizeof(why)) == -EINVAL);
        CHECK(strcmp(why, "incomplete manifest: no vmm, state") == 0);
        csm_free(&m);
        CHECK(csm_init(&m) == 0);
        bad = "ELF\x01\nkind=x\n";
        CHECK(csm_parse(bad, strlen(bad), &m, why, sizeof(why)) == -EINVAL);
        CHECK(strcmp(why, "not a cellvm snapshot manifest (first line 'ELF\\x01', expected "
                          "'cellvm-snapshot 1')") == 0);
        csm_free(&m);

        CHECK(csm_init(&m) == 0);
        CHECK(csm_set(&m, "vmm", "a\nb") == -EINVAL);
        CHECK(csm_set(&m, "no_such", "x") == -ENOENT);
        CHECK(csm_set(&m, "vcpus", "x") == -EINVAL);
        csm_free(&m);
}

/* A manifest written by C (file lines from stat) is read back by Python whole. */
static void test_written_by_c_read_by_python(void)
{
        char dir[] = "/tmp/cellvm-test-manifest-XXXXXX";
        CHECK(mkdtemp(dir) != NULL);
        char kernel[128], err[512];
        snprintf(kernel, sizeof(kernel), "%s/vmlinuz", dir);
        FILE *f = fopen(kernel, "we");
        CHECK(f && fputs("kernel", f) >= 0 && fclose(f) == 0);
        struct csm m;
        CHECK(csm_init(&m) == 0);
        CHECK(csm_set(&m, "kind", "template") == 0 && csm_set(&m, "vmm", "qemu") == 0);
        CHECK(csm_set(&m, "cmdline", "console=ttyS0 é") == 0);
        CHECK(csm_set_u64(&m, "memory_mb", 768) == 0 && csm_set_u64(&m, "vcpus", 2) == 0);
        CHECK(csm_add_file(&m, "kernel", kernel, err, sizeof(err)) == 0);
        CHECK(csm_add_file(&m, "rootfs", "/no/such/file", err, sizeof(err)) == -ENOENT);
        CHECK(strcmp(err, "/no/such/file: No such file or directory") == 0);
        CHECK(csm_set(&m, "arg", "-m") == 0 && csm_set(&m, "arg", "768") == 0);
        CHECK(csm_write(dir, &m, err, sizeof(err)) == 0);
        char *text;
        size_t len;
        CHECK(csm_format(&m, &text, &len) == 0);
        /* the file line: role, size, mtime in ns, path */
        struct stat st;
        CHECK(stat(kernel, &st) == 0);
        char want[256];
        snprintf(want, sizeof(want), "file=kernel 6 %lld%09ld %s\n", (long long)st.st_mtim.tv_sec,
                 st.st_mtim.tv_nsec, kernel);
        CHECK(strstr(text, want) != NULL);
        char code[512];
        snprintf(code, sizeof(code),
                 "import sys\nimport snapshot_format as snapshot\n"
                 "sys.stdout.write(snapshot.read_manifest(%s%s%s).to_text())\n",
                 "'", dir, "'");
        CHECK(python_ref(code, NULL, 0, pybuf, sizeof(pybuf)) == 0);
        CHECK(strcmp(pybuf, text) == 0);
        /* And C reads it back to the same. */
        struct csm back;
        CHECK(csm_init(&back) == 0);
        CHECK(csm_read(dir, &back, err, sizeof(err)) == 0);
        char *text2;
        CHECK(csm_format(&back, &text2, &len) == 0 && strcmp(text, text2) == 0);
        free(text);
        free(text2);
        csm_free(&back);
        csm_free(&m);
        char path[128];
        snprintf(path, sizeof(path), "%s/manifest", dir);
        CHECK(unlink(path) == 0 && unlink(kernel) == 0);
        CHECK(csm_init(&back) == 0);
        CHECK(csm_read(dir, &back, err, sizeof(err)) == -ENOENT);
        CHECK(strstr(err, "not found: not a complete snapshot") != NULL);
        csm_free(&back);
        CHECK(rmdir(dir) == 0);
}

static void write_size(const char *path, size_t size)
{
        int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
        CHECK(fd >= 0 && ftruncate(fd, (off_t)size) == 0 && close(fd) == 0);
}

static void test_check_files(void)
{
        char dir[] = "/tmp/cellvm-test-snapfiles-XXXXXX";
        CHECK(mkdtemp(dir) != NULL);
        char state[128], memory[128], err[512];
        snprintf(state, sizeof(state), "%s/state", dir);
        snprintf(memory, sizeof(memory), "%s/memory", dir);
        struct csm m;
        CHECK(csm_init(&m) == 0);
        CHECK(csm_set(&m, "memory", "memory") == 0);
        m.state_size = 100;
        m.memory_size = 4096;
        CHECK(csm_check_files(&m, dir, err, sizeof(err)) == -ENOENT);
        CHECK(strstr(err, "/state: No such file or directory: the snapshot's device state is "
                          "missing") != NULL);
        write_size(state, 99);
        CHECK(csm_check_files(&m, dir, err, sizeof(err)) == -EINVAL);
        CHECK(strstr(err, "/state is 99 bytes, its manifest says 100: truncated or replaced"));
        write_size(state, 100);
        CHECK(csm_check_files(&m, dir, err, sizeof(err)) == -ENOENT);
        CHECK(strstr(err, "the snapshot's memory file is missing") != NULL);
        write_size(memory, 4096);
        CHECK(csm_check_files(&m, dir, err, sizeof(err)) == 0);
        /* a name that leaves the snapshot's directory is no file name */
        CHECK(csm_set(&m, "state", "../state") == 0);
        CHECK(csm_check_files(&m, dir, err, sizeof(err)) == -EINVAL);
        CHECK(strstr(err, "is not a file name") != NULL);
        csm_free(&m);
        CHECK(unlink(state) == 0 && unlink(memory) == 0 && rmdir(dir) == 0);
}

static void test_differences(void)
{
        struct csm a, b;
        char why[2048];
        CHECK(csm_init(&a) == 0 && csm_init(&b) == 0);
        const char *lines[][2] = {{"vmm", "qemu"},
                                  {"accel", "tcg"},
                                  {"cmdline", "ro quiet"},
                                  {"arg", "qemu"},
                                  {"arg", "-m"},
                                  {"arg", "1024"},
                                  {"file", "kernel 1 2 /k"},
                                  {"file", "rootfs 3 4 /r"}};
        for (size_t i = 0; i < sizeof(lines) / sizeof(lines[0]); i++)
                CHECK(csm_set(&a, lines[i][0], lines[i][1]) == 0 &&
                      csm_set(&b, lines[i][0], lines[i][1]) == 0);
        a.memory_mb = b.memory_mb = 1024;
        a.vcpus = b.vcpus = 1;
        CHECK(csm_differences(&a, &b, why, sizeof(why)) == 0 && why[0] == '\0');
        b.memory_mb = 768;
        CHECK(csm_differences(&a, &b, why, sizeof(why)) == 1);
        CHECK(strcmp(why, "memory_mb: snapshot has 1024, now 768") == 0);
        CHECK(csm_set(&b, "accel", "kvm") == 0);
        free(b.file.v[1]);
        b.file.v[1] = strdup("rootfs 5 6 /r");
        CHECK(csm_differences(&a, &b, why, sizeof(why)) == 3);
        CHECK(strcmp(why, "accel: snapshot has 'tcg', now 'kvm'; memory_mb: snapshot has 1024, "
                          "now 768; rootfs file: snapshot was taken with '3 4 /r' (size "
                          "mtime_ns path), now '5 6 /r'") == 0);
        /* Only the argv differs: said last, and only then. */
        csm_free(&b);
        CHECK(csm_copy(&b, &a) == 0);
        free(b.arg.v[2]);
        b.arg.v[2] = strdup("768");
        CHECK(csm_set(&b, "arg", "-smp") == 0);
        CHECK(csm_differences(&a, &b, why, sizeof(why)) == 1);
        CHECK(strcmp(why, "the VMM's command line: '1024' -> '768'; 3 arguments -> 4") == 0);
        /* an initramfs the snapshot had and the launch has not */
        csm_free(&b);
        CHECK(csm_copy(&b, &a) == 0);
        CHECK(csm_set(&a, "file", "initramfs 7 8 /i") == 0);
        CHECK(csm_differences(&a, &b, why, sizeof(why)) == 1);
        CHECK(strcmp(why, "initramfs file: snapshot was taken with '7 8 /i' (size mtime_ns "
                          "path), now 'none'") == 0);
        csm_free(&a);
        csm_free(&b);
}

static void neutral_is(const char *in, const char *want)
{
        char *got = ctsc_neutral(in);
        CHECK(got && strcmp(got, want) == 0);
        if (got && strcmp(got, want) != 0)
                fprintf(stderr, "ctsc_neutral(%s) = %s\n", in, got);
        free(got);
}

/* The kernel's tsc_early_khz: left out of a template's name, compared within
 * CTSC_TOLERANCE_PPM, with the words and messages of Python's snapshot.py. */
static void test_tsc_word(void)
{
        neutral_is("ro tsc_early_khz=2300001 quiet", "ro tsc_early_khz=host quiet");
        neutral_is("tsc_early_khz=1\ttsc_early_khz=22", "tsc_early_khz=host\ttsc_early_khz=host");
        neutral_is("xtsc_early_khz=5 tsc_early_khz=5x tsc_early_khz= tsc_early_khz=-1",
                   "xtsc_early_khz=5 tsc_early_khz=5x tsc_early_khz= tsc_early_khz=-1");
        neutral_is("tsc_early_khz=12345678901234567890", "tsc_early_khz=12345678901234567890");
        neutral_is("", "");
        uint64_t khz = 0;
        CHECK(ctsc_khz_of("a tsc_early_khz=2300001 b", &khz) && khz == 2300001);
        CHECK(!ctsc_khz_of("a tsc_early_khz=x", &khz));

        static const char base[] = "cellvm-snapshot 1\nkind=template\nvmm=qemu\nstate=state\n"
                                   "memory_mb=1024\nvcpus=1\n";
        static const char *const pairs[][2] = {
            {"ro tsc_early_khz=2300001", "ro tsc_early_khz=2300003"}, /* noise: fits */
            {"ro tsc_early_khz=2300000", "ro tsc_early_khz=2323000"}, /* 1%: another host */
            {"ro", "ro tsc_early_khz=2300000"},                       /* made without one */
            {"ro tsc_early_khz=2300000", "rw tsc_early_khz=2300000"}, /* the rest differs */
        };
        static const char code[] =
            "import sys\nimport snapshot_format as snapshot\n"
            "a, b = sys.stdin.read().split('\\0')\n"
            "print('; '.join(snapshot.differences(snapshot.Manifest.from_text(a, 'a'), "
            "snapshot.Manifest.from_text(b, 'b'))))\n";
        for (size_t i = 0; i < sizeof(pairs) / sizeof(pairs[0]); i++) {
                char ta[512], tb[512], in[1100], why[1024], py[1100], name_a[96], name_b[96];
                snprintf(ta, sizeof(ta), "%scmdline=%s\narg=qemu\narg=-append\narg=%s\n", base,
                         pairs[i][0], pairs[i][0]);
                snprintf(tb, sizeof(tb), "%scmdline=%s\narg=qemu\narg=-append\narg=%s\n", base,
                         pairs[i][1], pairs[i][1]);
                struct csm a, b;
                CHECK(csm_init(&a) == 0 && csm_init(&b) == 0);
                CHECK(csm_parse(ta, strlen(ta), &a, why, sizeof(why)) == 0);
                CHECK(csm_parse(tb, strlen(tb), &b, why, sizeof(why)) == 0);
                int n = csm_differences(&a, &b, why, sizeof(why));
                CHECK(n == (i == 0 ? 0 : 1));
                CHECK(ctpl_name(&a, name_a, sizeof(name_a)) == 0 &&
                      ctpl_name(&b, name_b, sizeof(name_b)) == 0);
                CHECK((strcmp(name_a, name_b) == 0) == (i < 2)); /* one template for one host */
                int len = snprintf(in, sizeof(in), "%s%c%s", ta, 0, tb);
                CHECK(python_ref(code, in, (size_t)len, py, sizeof(py)) == 0);
                strcat(why, "\n");
                CHECK(strcmp(py, why) == 0);
                if (strcmp(py, why) != 0)
                        fprintf(stderr, "differences: python %sC %s", py, why);
                csm_free(&a);
                csm_free(&b);
        }
}

static void test_fnv_against_python(void)
{
        /* The published FNV-1a 64 test vectors. */
        CHECK(ctpl_fnv1a64(CTPL_FNV_BASIS, "", 0) == 0xcbf29ce484222325ull);
        CHECK(ctpl_fnv1a64(CTPL_FNV_BASIS, "a", 1) == 0xaf63dc4c8601ec8cull);
        CHECK(ctpl_fnv1a64(CTPL_FNV_BASIS, "foobar", 6) == 0x85944171f73967e8ull);
        /* Python's fnv1a64 on the same bytes: every byte value, and UTF-8. */
        unsigned char all[256];
        for (int i = 0; i < 256; i++)
                all[i] = (unsigned char)i;
        char out[256];
        CHECK(python_ref("import sys\nimport snapshot_format as snapshot\n"
                         "print('%016x' % snapshot.fnv1a64(bytes(range(256))))\n"
                         "print('%016x' % snapshot.fnv1a64('é€😀'.encode()))\n",
                         NULL, 0, out, sizeof(out)) == 0);
        char mine[64];
        snprintf(mine, sizeof(mine), "%016llx\n%016llx\n",
                 (unsigned long long)ctpl_fnv1a64(CTPL_FNV_BASIS, all, sizeof(all)),
                 (unsigned long long)ctpl_fnv1a64(CTPL_FNV_BASIS, "é€😀", strlen("é€😀")));
        CHECK(strcmp(out, mine) == 0);
}

/* The name of a launch's template: the formula of docs/SNAPSHOTS.md ("Name")
 * over the manifest's fields, computed by Python, equals ctpl_name's. */
static void test_name_against_python(void)
{
        static const char *const texts[] = {
            good,
            "cellvm-snapshot 1\nkind=template\nvmm=firecracker\nstate=state\nmemory_mb=512\n"
            "vcpus=2\ncmdline=\nfile=kernel 1 2 /k k\nrequest=PUT /vm {}\nrequest=\n"
            "arg=firecracker\narg=--api-sock\narg=@DIR@/api.sock\n",
            "cellvm-snapshot 1\nkind=template\nvmm=qemu\nstate=state\n", /* no arg at all */
            /* the host's TSC frequency: the same name at any value (tsc_word.h) */
            "cellvm-snapshot 1\nkind=template\nvmm=qemu\nstate=state\n"
            "cmdline=console=ttyS0 tsc_early_khz=2300001 quiet\narg=qemu\narg=-append\n"
            "arg=console=ttyS0 tsc_early_khz=2300001 quiet\n",
            NULL,
        };
        static const char code[] =
            "import sys\nimport snapshot_format as snapshot\n"
            "w = snapshot.Manifest.from_text(sys.stdin.read(), 'stdin')\n"
            "print(snapshot.template_name(w.vmm, w.arg + w.request + [w.cmdline, "
            "str(w.memory_mb), str(w.vcpus)] + [f.split(' ', 3)[3] for f in w.file]))\n";
        for (const char *const *t = texts; *t; t++) {
                char out[128], name[96], why[256];
                CHECK(python_ref(code, *t, strlen(*t), out, sizeof(out)) == 0);
                struct csm m;
                CHECK(csm_init(&m) == 0);
                CHECK(csm_parse(*t, strlen(*t), &m, why, sizeof(why)) == 0);
                CHECK(ctpl_name(&m, name, sizeof(name)) == 0);
                strcat(name, "\n");
                CHECK(strcmp(out, name) == 0);
                if (strcmp(out, name) != 0)
                        fprintf(stderr, "python %s, C %s", out, name);
                csm_free(&m);
        }
}

int main(void)
{
        test_parity_with_python();
        test_size_bound();
        test_stricter_than_python();
        test_fields_and_messages();
        test_written_by_c_read_by_python();
        test_check_files();
        test_differences();
        test_tsc_word();
        test_fnv_against_python();
        test_name_against_python();
        return check_report("test_client_manifest");
}
