#include "boot_timer.h"

#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>
#if defined(__x86_64__) || defined(__i386__)
#include <sys/io.h>
#endif

#define BOOT_TIMER_MAGIC 123
/* x86 Firecracker took the byte on this I/O port until mid-2020 (its issue
 * #2069 / PR #1921 made the boot timer an MMIO device): old releases only. */
#define BOOT_TIMER_PORT 0x3f0

/* True when addr lies in a top-level "System RAM" range of /proc/iomem: the
 * boot timer is meant for a VMM that has a device there (Firecracker), and on
 * another VMM the address may be guest memory (QEMU virt's RAM starts at
 * 0x40000000, arm64 Firecracker's timer address). STRICT_DEVMEM refuses such
 * a mapping anyway; this keeps a kernel without it from corrupting a page. */
static bool addr_is_ram(uint64_t addr)
{
        FILE *f = fopen("/proc/iomem", "re");
        char line[160];
        bool ram = false;

        if (f == NULL)
                return false; /* no /proc/iomem: leave the decision to /dev/mem */
        while (!ram && fgets(line, sizeof(line), f) != NULL) {
                unsigned long long lo, hi;
                int n = 0;
                if (line[0] == ' ' || sscanf(line, "%llx-%llx : %n", &lo, &hi, &n) != 2 || n == 0)
                        continue;
                /* Without CAP_SYS_ADMIN the ranges read as 0: no information. */
                ram =
                    strncmp(line + n, "System RAM", 10) == 0 && hi > 0 && addr >= lo && addr <= hi;
        }
        fclose(f);
        return ram;
}

static int signal_mmio(uint64_t addr)
{
        long page = sysconf(_SC_PAGESIZE);
        int r = 0;

        if (page <= 0)
                return -EINVAL;
        if (addr_is_ram(addr))
                return -EADDRINUSE;
        int fd = open("/dev/mem", O_RDWR | O_SYNC | O_CLOEXEC);
        if (fd < 0)
                return -errno;
        uint64_t base = addr & ~((uint64_t)page - 1);
        void *map = mmap(NULL, (size_t)page, PROT_WRITE, MAP_SHARED, fd, (off_t)base);
        if (map == MAP_FAILED) {
                r = -errno;
                close(fd);
                return r;
        }
        *((volatile uint8_t *)map + (addr - base)) = BOOT_TIMER_MAGIC;
        if (munmap(map, (size_t)page) != 0)
                r = -errno;
        close(fd);
        return r < 0 ? r : 1;
}

static int signal_pio(void)
{
#if defined(__x86_64__) || defined(__i386__)
        if (ioperm(BOOT_TIMER_PORT, 1, 1) != 0)
                return -errno;
        outb(BOOT_TIMER_MAGIC, BOOT_TIMER_PORT);
        /* Drop the port again: the agent inherits nothing it does not need. */
        if (ioperm(BOOT_TIMER_PORT, 1, 0) != 0)
                return -errno;
        return 1;
#else
        return -EOPNOTSUPP;
#endif
}

int boot_timer_signal(enum boot_timer_mode mode, uint64_t mmio_addr)
{
        switch (mode) {
        case BOOT_TIMER_MMIO:
                return signal_mmio(mmio_addr);
        case BOOT_TIMER_PIO:
                return signal_pio();
        case BOOT_TIMER_OFF:
                break;
        }
        return 0;
}
