/*
 * holder: an unconfined process of the test's user, holding a socket
 * connected to the outside at fd 3, for a confined process to abuse.
 *
 * It prints its pid and the address of its buffer, then, for each line
 * read on stdin, writes the string in its buffer to fd 3 and answers
 * "wrote" on stdout. EOF ends it. Unless another process wrote into its
 * memory, the outside receives "holder-idle;" each time: the sentinel
 * that shows, in the order of one TCP stream, what came before it.
 */
#include <stdio.h>
#include <string.h>
#include <unistd.h>

static char buf[64] __attribute__((aligned(8))) = "holder-idle;";

int main(void)
{
	char line[64];

	setvbuf(stdout, NULL, _IONBF, 0);
	printf("%d %lu\n", (int)getpid(), (unsigned long)buf);
	while (fgets(line, sizeof line, stdin)) {
		size_t n = strnlen(buf, sizeof buf);
		if (write(3, buf, n) != (ssize_t)n) {
			perror("holder: write");
			return 1;
		}
		printf("wrote\n");
	}
	return 0;
}
