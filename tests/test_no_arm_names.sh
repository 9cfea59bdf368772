#!/bin/sh
# test_no_arm_names.sh: the study analyses (experiments/study_NAME.c, the
# report hooks of experiments/study_hooks.c) never name an arm (issue 31): they
# find arms by what the study file declares of them (arm.ID.tag, .group, .x,
# the `reference` key), so renaming an arm in its .study file cannot silently
# change a table, a figure or an observation.  A source check, with the
# built-in study files as the list of arm names:
#   (a) a string literal as the run name of st_aggregate, st_find_run or the
#       reference of st_plot_gap;
#   (b) a string literal compared (strcmp, strncmp, strstr) with a run's or
#       arm's name (->name, .arm, names[...], a variable `name` ...);
#   (c) a printf format that builds an arm's name ("%s all" matches the arm
#       `e4m3fn all`);
#   (d) a string literal equal to an arm id or display name of the hook's own
#       study file, unless that file also declares it as a tag or group (then
#       it is analysis metadata, the sanctioned way);
#   (e) a fixed count of a name's characters skipped (r->name + 7: a prefix
#       the arms' names happen to share).
# ALLOW below lists literals that look like arm names but are not (none yet).
srcdir=${srcdir:-.}
if ! command -v perl >/dev/null 2>&1; then echo "SKIP: no perl"; exit 77; fi
exec perl -w - "$srcdir" <<'END_OF_PERL'
use strict;
my $src = shift @ARGV;
# "FILE\tLITERAL": a literal that matches an arm's name without naming it
my %ALLOW = map { $_ => 1 } ();
sub slurp { my ($p) = @_; open(my $f, '<', $p) or die "cannot read $p: $!\n"; local $/; my $t = <$f>; close $f; return $t; }

# the report hooks: {"NAME", st_report_NAME} in study_hooks.c
my $table = slurp("$src/experiments/study_hooks.c");
my @hooks;
while ($table =~ /\{\s*"(\w+)"\s*,\s*st_report_(\w+)\s*\}/g) { push @hooks, $1 if $1 eq $2; }

# every built-in study file: its arms' ids and display names, its tags and groups
my (%arms_of, %meta_of, @all_arms);
my $nfile = 0;
for my $p (glob("$src/experiments/studies/*.study")) {
  $nfile++;
  my ($report, %arms, %meta) = ('');
  for my $l (split /\n/, slurp($p)) {
    next if $l =~ /^\s*#/;
    next unless $l =~ /^\s*(?:(?:tiny|default|full)\.)?(\S.*?)\s*=\s*(.*?)\s*$/;
    my ($k, $v) = ($1, $2);
    $report = $v if $k eq 'report';
    next unless $k =~ /^arm\.([^.]+)\.(.+)$/;
    my ($id, $f) = ($1, $2);
    $arms{$id} = 1;
    $arms{$v} = 1 if $f eq 'name';
    $meta{$v} = 1 if $f eq 'tag' || $f eq 'group';
  }
  push @all_arms, sort keys %arms;
  next unless $report;
  $arms_of{$report}{$_} = 1 for keys %arms;
  $meta_of{$report}{$_} = 1 for keys %meta;
}

# C text without comments, string literals kept (escapes left as written)
sub strip {
  my ($t) = @_;
  my $o = '';
  while (length $t) {
    if ($t =~ s{^("(?:[^"\\\n]|\\.)*")}{}s) { $o .= $1; }
    elsif ($t =~ s{^('(?:[^'\\\n]|\\.)*')}{}s) { $o .= $1; }
    elsif ($t =~ s{^/\*(.*?)\*/}{}s) { my $c = $1; $o .= "\n" x ($c =~ tr/\n//); $o .= ' '; }
    elsif ($t =~ s{^//[^\n]*}{}) { }
    else { $t =~ s{^([^"'/]+|/)}{}s; $o .= $1; }
  }
  return $o;
}
# the arguments of the call whose '(' is at $pos: [text, offset] each
sub args_at {
  my ($c, $pos) = @_;
  my ($depth, $start, @a) = (0, $pos + 1);
  for (my $i = $pos; $i < length $c; $i++) {
    my $ch = substr($c, $i, 1);
    if ($ch eq '"') { substr($c, $i) =~ /^("(?:[^"\\]|\\.)*")/s; $i += length($1) - 1; next; }
    if ($ch eq '(') { $depth++; next; }
    if ($ch eq ')' && --$depth == 0) { push @a, [substr($c, $start, $i - $start), $start]; last; }
    if ($ch eq ',' && $depth == 1) { push @a, [substr($c, $start, $i - $start), $start]; $start = $i + 1; }
  }
  return @a;
}
sub line_of { my ($c, $off) = @_; return 1 + (substr($c, 0, $off) =~ tr/\n//); }
# a printf format as a regex over whole names; undef when it has no conversion
sub fmt_regex {
  my ($s) = @_;
  return undef unless $s =~ /%[-+ 0#]*\d*(?:\.\d+)?(?:hh|h|ll|l|z)?[dsgfeuxc]/;
  (my $alnum = $s) =~ s/%[-+ 0#]*\d*(?:\.\d+)?(?:hh|h|ll|l|z)?[dsgfeuxc]//g;
  return undef if ($alnum =~ tr/A-Za-z0-9//) < 3; # "%s: %s" names nothing
  my $r = '';
  for my $part (split /(%[-+ 0#]*\d*(?:\.\d+)?(?:hh|h|ll|l|z)?[dsgfeuxc]|%%)/, $s) {
    if ($part eq '%%') { $r .= '%'; } elsif ($part =~ /^%/) { $r .= '.+'; } else { $r .= quotemeta($part); }
  }
  return qr/^$r$/;
}

my ($nbad, $nscan) = (0, 0);
sub bad {
  my ($file, $line, $lit, $why) = @_;
  return if $ALLOW{"$file\t$lit"};
  print "FAIL: experiments/$file:$line: \"$lit\": $why\n";
  $nbad++;
}
my $NAMEISH = qr/(?:->|\.)\s*(?:name|arm|label|dir)\b|\bnames?\s*\[|\barms?\s*\[|\b(?:name|arm|ref|refarm)\s*$/;
for my $h (@hooks) {
  my $file = "study_$h.c";
  my $c = strip(slurp("$src/experiments/$file"));
  $nscan++;
  # (a) a literal as a run name
  while ($c =~ /\b(st_aggregate|st_find_run|st_plot_gap)\s*\(/g) {
    my ($fn, $at) = ($1, pos($c) - 1);
    my @a = args_at($c, $at);
    my $k = $fn eq 'st_plot_gap' ? 4 : 1;
    next unless @a > $k && $a[$k][0] =~ /^\s*"((?:[^"\\]|\\.)*)"\s*$/;
    bad($file, line_of($c, $a[$k][1]), $1, "a literal as the run name of $fn");
  }
  # (b) a literal compared with a name
  while ($c =~ /\b(strcmp|strncmp|strstr|strcasecmp)\s*\(/g) {
    my ($fn, $at) = ($1, pos($c) - 1);
    my @a = args_at($c, $at);
    next unless @a >= 2;
    for my $i (0, 1) {
      next unless $a[$i][0] =~ /^\s*"((?:[^"\\]|\\.)*)"\s*$/;
      my $lit = $1;
      (my $other = $a[1 - $i][0]) =~ s/\s+$//;
      bad($file, line_of($c, $a[$i][1]), $lit, "compared ($fn) with a name ($other)") if $other =~ $NAMEISH;
    }
  }
  # (e) a name's prefix skipped by count
  while ($c =~ /((?:->|\.)\s*name\b|\bnames?\s*\[[^\]]*\])\s*\+\s*(\d+)/g) {
    bad($file, line_of($c, $-[0]), "$1 + $2", "skips a prefix the arms' names share");
  }
  # (c), (d) every literal
  while ($c =~ /"((?:[^"\\]|\\.)*)"/g) {
    my ($lit, $off) = ($1, $-[0]);
    my $re = fmt_regex($lit);
    if ($re) {
      my @hit = grep { $_ =~ $re } @all_arms;
      bad($file, line_of($c, $off), $lit, "a format that builds arm names (" . join(', ', @hit[0 .. ($#hit < 2 ? $#hit : 2)]) . ")") if @hit;
    } elsif ($arms_of{$h}{$lit} && !$meta_of{$h}{$lit}) {
      bad($file, line_of($c, $off), $lit, "an arm of the study files with report = $h");
    }
  }
}
if ($nscan < 10 || $nfile < 10 || !@all_arms) { print "FAIL: scanned $nscan analyses and $nfile study files: too few\n"; exit 1; }
if ($nbad) { print "FAIL: $nbad arm name(s) in the study analyses (find arms by tag, group, x or the reference key)\n"; exit 1; }
print "PASS: $nscan study analyses name no arm of the $nfile built-in study files\n";
exit 0;
END_OF_PERL
