#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
static double now(void){struct timespec t;clock_gettime(CLOCK_MONOTONIC,&t);return t.tv_sec*1e6+t.tv_nsec*1e-3;}
int main(int c,char**v){int fd=open(v[1],O_RDONLY);struct stat st;fstat(fd,&st);
 volatile char*p=mmap(0,st.st_size,PROT_READ|PROT_EXEC,MAP_PRIVATE,fd,0);double mx=0,sum=0;int n=0,slow=0;
 for(long o=0;o<st.st_size;o+=4096){double a=now();(void)p[o];double d=now()-a;sum+=d;n++;if(d>mx)mx=d;if(d>50)slow++;}
 printf("%d pages, total %.0f us, max %.0f us, >50us: %d\n",n,sum,mx,slow);}
